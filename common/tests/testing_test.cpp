#include "course/testing.hpp"

#include <gtest/gtest.h>

namespace {

// The first kernel has inline assembly whose braces start lines, as cuda::ptx wrappers emit.
const char* kPtx =
    "// .globl\t_Z5firstPKjPj\n"
    ".visible .entry _Z5firstPKjPj(\n"
    "\t.param .u64 p0\n)\n{\n\t// begin inline asm\n{\n.reg .pred p;\n}\n\t// end inline asm\n"
    "\tld.global.u32 %r1, [%rd1];\n}\n"
    "\t// .globl\t_Z6secondILi4EEvPKj\n"
    ".visible .entry _Z6secondILi4EEvPKj(\n)\n{\n\tcp.async.ca.shared.global [%r1], [%rd1], 4, 4;\n}\n";

TEST(HostPtx, FindsTheBodyOfTheNamedKernelOnly) {
  const std::string first = course::ptx_kernel_body(kPtx, "first");
  EXPECT_NE(first.find("ld.global.u32"), std::string::npos);
  EXPECT_EQ(first.find("cp.async"), std::string::npos) << "ran into the next kernel";
  const std::string second = course::ptx_kernel_body(kPtx, "secondILi4E");
  EXPECT_NE(second.find("cp.async.ca"), std::string::npos);
  EXPECT_EQ(second.find("ld.global"), std::string::npos);
}

TEST(HostPtx, UnknownKernelGivesNothing) { EXPECT_EQ(course::ptx_kernel_body(kPtx, "third"), ""); }

TEST(HostPtx, UnreadableFileGivesNothing) { EXPECT_EQ(course::read_text_file("/no/such/file.ptx"), ""); }

}  // namespace
