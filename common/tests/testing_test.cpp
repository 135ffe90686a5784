#include "course/testing.hpp"
#include "course/codegen.hpp"

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

TEST(HostSass, FindsTheBodyOfTheNamedKernelOnly) {
  const std::string sass =
      "\t\tFunction : _Z5firstPKjPj\n\t/*0000*/ LDG.E R2, desc[UR4][R2.64] ;\n\t\t.......\n"
      "\t\tFunction : _Z6secondILi4EEvPKj\n\t/*0000*/ LDGSTS.E.BYPASS.128 [R1], desc[UR4][R2.64] ;\n";
  const std::string first = course::sass_kernel_body(sass, "first");
  EXPECT_EQ(course::count_matches(first, "LDG\\.E "), 1);
  EXPECT_EQ(course::count_matches(first, "LDGSTS"), 0) << "ran into the next kernel";
  EXPECT_EQ(course::count_matches(course::sass_kernel_body(sass, "second"), "LDGSTS\\.E\\.BYPASS\\.128"), 1);
  EXPECT_EQ(course::sass_kernel_body(sass, "third"), "");
}

TEST(HostPtx, CountsEveryMatch) {
  EXPECT_EQ(course::count_matches("cp.async.ca a; cp.async.cg b; cp.async.ca c;", "cp\\.async\\.ca"), 2);
  EXPECT_EQ(course::count_matches("ld.global", "st\\.global"), 0);
}

TEST(HostPtx, UnreadableFileGivesNothing) { EXPECT_EQ(course::read_text_file("/no/such/file.ptx"), ""); }

// Whether another process could take the trap lock now (a second open file description
// conflicts with the holder's exactly as another process's would).
bool trap_lock_is_free() {
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "course_gpu_trap.lock";
  const int fd = open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  const bool free = flock(fd, LOCK_EX | LOCK_NB) == 0;
  close(fd);
  return free;
}

TEST(HostTrapLock, HeldWhileAliveAndReleasedAfter) {
  {
    const course::TrapLock lock;
    EXPECT_FALSE(trap_lock_is_free()) << "a second trapping test could start now";
  }
  EXPECT_TRUE(trap_lock_is_free());
}

}  // namespace
