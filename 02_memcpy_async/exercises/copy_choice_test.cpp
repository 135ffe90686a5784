// Grades exercise 02.1: proven_alignment(), promise_broken() and choose() on calls written as a
// programmer writes them, first the chapter's own calls, then every combination of library, GPU,
// type, size, completion and addresses. The expected instruction comes from the chapter's model
// (memcpy_async_model.hpp), given the alignment each library reads from the call.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "memcpy_async_model.hpp"

namespace {

using exercise::Choice;
using exercise::CompletesOn;
using exercise::CopyCall;
using exercise::Instruction;
using exercise::Library;

// The call in words, for the messages.
std::string describe(const CopyCall& call) {
  static const char* const kTypes[17] = {"", "char", "short", "", "float", "", "", "", "double", "", "", "", "", "", "",
                                         "", "uint4"};
  std::string text = call.library == Library::cuda ? "cuda::memcpy_async" : "cooperative_groups::memcpy_async";
  text += " on " + std::to_string(call.sm / 10) + "." + std::to_string(call.sm % 10) + ", ";
  text += (call.type_align <= 16 ? std::string(kTypes[call.type_align]) : std::string("?")) + " pointers, ";
  text += call.promised_align == 0 ? std::string("a plain size")
                                   : "aligned_size_t<" + std::to_string(call.promised_align) + ">";
  text += " of " + std::to_string(call.bytes) + " bytes";
  if (call.library == Library::cuda) {
    text += call.completes_on == CompletesOn::smem_block_barrier ? ", on a block barrier in shared memory"
                                                                  : ", on a pipeline";
  }
  auto where = [](std::uintptr_t address) {
    return address % 16 == 0 ? std::string("16-byte aligned")
                             : std::to_string(address % 16) + " bytes past a 16-byte boundary";
  };
  return text + ", dst " + where(call.dst) + ", src " + where(call.src);
}

std::string describe(const Choice& choice) {
  const std::string width = std::to_string(choice.width_bytes);
  switch (choice.instruction) {
    case Instruction::bulk_copy: return "a bulk copy of " + width + " bytes";
    case Instruction::ldgsts_bypass_l1: return width + "-byte LDGSTS that bypass L1";
    case Instruction::ldgsts_through_l1: return width + "-byte LDGSTS through L1";
    case Instruction::synchronous: return "a synchronous loop of " + width + "-byte loads and stores";
  }
  return "?";
}

// What each library reads from the call (cuda::memcpy_async: the larger of alignof(T) and N;
// cooperative_groups: N when the size is an aligned_size_t<N>, else alignof(T)).
std::size_t library_proof(const CopyCall& call) {
  if (call.library == Library::cuda) return call.type_align > call.promised_align ? call.type_align : call.promised_align;
  return call.promised_align != 0 ? call.promised_align : call.type_align;
}

// The model's path for the call, as a Choice.
Choice expected_choice(const CopyCall& call) {
  const std::size_t proof = library_proof(call);
  const CopyPath path =
      call.library == Library::cuda
          ? cuda_memcpy_async_path(call.sm, proof, call.bytes,
                                   call.completes_on == CompletesOn::smem_block_barrier ? SyncObject::smem_block_barrier
                                                                                        : SyncObject::pipeline)
          : cg_memcpy_async_path(proof, call.dst, call.src, call.bytes);
  switch (path.copy) {
    case Copy::bulk: return {Instruction::bulk_copy, path.width_bytes};
    case Copy::ldgsts:
      return {path.bypasses_l1() ? Instruction::ldgsts_bypass_l1 : Instruction::ldgsts_through_l1, path.width_bytes};
    case Copy::sync: return {Instruction::synchronous, path.width_bytes};
  }
  return {};
}

bool same(const Choice& a, const Choice& b) { return a.instruction == b.instruction && a.width_bytes == b.width_bytes; }

CopyCall call_of(Library library, int sm, std::size_t type_align, std::size_t promised, CompletesOn on,
                 std::uintptr_t src_offset, std::size_t bytes) {
  CopyCall call;
  call.library = library;
  call.sm = sm;
  call.type_align = type_align;
  call.promised_align = promised;
  call.completes_on = on;
  call.dst = 0x7000;  // shared memory, 16-byte aligned
  call.src = 0x7f0000200000 + src_offset;
  call.bytes = bytes;
  return call;
}

TEST(HostExerciseCopyChoice, TheProofComesFromTheTypeAndTheSize) {
  const Library cuda = Library::cuda, cg = Library::cooperative_groups;
  struct Case {
    Library library;
    std::size_t type_align, promised;
  };
  const Case cases[] = {
      {cuda, 4, 0}, {cuda, 4, 16}, {cuda, 1, 0}, {cuda, 1, 8},  {cuda, 16, 0}, {cuda, 16, 4}, {cuda, 8, 0},
      {cuda, 4, 32}, {cg, 4, 0},   {cg, 4, 16},  {cg, 1, 0},    {cg, 2, 0},    {cg, 1, 16},   {cg, 16, 4},
  };
  for (const Case& c : cases) {
    const CopyCall call = call_of(c.library, 80, c.type_align, c.promised, CompletesOn::other, 0, 4096);
    if (exercise::proven_alignment(call) != library_proof(call)) ADD_FAILURE()
        << describe(call) << ": proven_alignment() says " << exercise::proven_alignment(call)
        << " bytes, which is not what this library assumes from the call";
  }
}

TEST(HostExerciseCopyChoice, BrokenPromisesAreFound) {
  for (const Library library : {Library::cuda, Library::cooperative_groups}) {
    for (const std::size_t type_align : {1u, 2u, 4u, 8u, 16u}) {
      for (const std::size_t promised : {0u, 1u, 2u, 4u, 8u, 16u, 32u}) {
        for (std::uintptr_t src_offset = 0; src_offset < 32; src_offset += 2) {
          for (const std::size_t bytes : {4096u, 1000u, 100u}) {
            const CopyCall call = call_of(library, 90, type_align, promised, CompletesOn::other, src_offset, bytes);
            const std::size_t proof = library_proof(call);
            const bool broken = call.dst % proof != 0 || call.src % proof != 0 || call.bytes % proof != 0;
            if (exercise::promise_broken(call) != broken) FAIL()
                << describe(call) << ": promise_broken() says "
                << (broken ? "the call keeps its promise" : "the call breaks its promise") << ", it does not";
          }
        }
      }
    }
  }
}

// The chapter's calls (memcpy_async.cu, memcpy_async_lab.cu, halo_stencil.cu), on 8.0 and 9.0.
TEST(HostExerciseCopyChoice, TheChaptersCallsBecomeTheModelsInstructions) {
  const Library cuda = Library::cuda, cg = Library::cooperative_groups;
  const CompletesOn barrier = CompletesOn::smem_block_barrier, pipeline = CompletesOn::other;
  struct Row {
    const char* variant;
    CopyCall call;
  };
  const Row rows[] = {
      {"memcpy_async cg_memcpy_async", call_of(cg, 0, 4, 16, pipeline, 0, 4096)},
      {"memcpy_async cuda_memcpy_async_block", call_of(cuda, 0, 4, 16, barrier, 0, 4096)},
      {"memcpy_async cuda_memcpy_async_thread", call_of(cuda, 0, 4, 16, barrier, 0, 16)},
      {"memcpy_async_lab align4", call_of(cuda, 0, 4, 4, barrier, 0, 4096)},
      {"memcpy_async_lab misaligned_cg", call_of(cg, 0, 1, 0, pipeline, 4, 4096)},
      {"memcpy_async_lab misaligned_cuda", call_of(cuda, 0, 1, 0, barrier, 4, 4096)},
      {"memcpy_async_lab ldgsts_4", call_of(cuda, 0, 4, 4, pipeline, 0, 4096)},
      {"memcpy_async_lab ldgsts_8", call_of(cuda, 0, 4, 8, pipeline, 0, 4096)},
      {"memcpy_async_lab ldgsts_16", call_of(cuda, 0, 4, 16, pipeline, 0, 4096)},
      {"halo_stencil stencil_cuda_memcpy_async", call_of(cuda, 0, 4, 4, barrier, 0, 4)},
      {"halo_stencil stencil_cg_memcpy_async (centre)", call_of(cg, 0, 4, 0, pipeline, 32, 128)},
  };
  for (const Row& row : rows) {
    for (const int sm : {80, 90}) {
      CopyCall call = row.call;
      call.sm = sm;
      const Choice mine = exercise::choose(call);
      if (!same(mine, expected_choice(call))) ADD_FAILURE()
          << row.variant << ": " << describe(call) << ": choose() says " << describe(mine)
          << ", which is not what the library emits";
    }
  }
}

TEST(HostExerciseCopyChoice, EveryCallAgreesWithTheLibraries) {
  long checked = 0;
  for (const Library library : {Library::cuda, Library::cooperative_groups}) {
    for (const int sm : {80, 86, 90}) {
      for (const std::size_t type_align : {1u, 2u, 4u, 8u, 16u}) {
        for (const std::size_t promised : {0u, 1u, 2u, 4u, 8u, 16u, 32u}) {
          for (const CompletesOn on : {CompletesOn::smem_block_barrier, CompletesOn::other}) {
            for (const std::uintptr_t dst_offset : {0u, 4u}) {
              for (std::uintptr_t src_offset = 0; src_offset < 16; ++src_offset) {
                for (const std::size_t bytes : {4096u, 100u}) {
                  CopyCall call = call_of(library, sm, type_align, promised, on, src_offset, bytes);
                  call.dst += dst_offset;
                  const Choice mine = exercise::choose(call);
                  if (!same(mine, expected_choice(call))) FAIL()
                      << describe(call) << ": choose() says " << describe(mine)
                      << ", which is not what the library emits";
                  ++checked;
                }
              }
            }
          }
        }
      }
    }
  }
  // A call too short for the width the addresses allow.
  const CopyCall shorter = call_of(Library::cooperative_groups, 80, 1, 0, CompletesOn::other, 0, 8);
  if (!same(exercise::choose(shorter), expected_choice(shorter))) ADD_FAILURE()
      << describe(shorter) << ": choose() says " << describe(exercise::choose(shorter))
      << ", which is not what the library emits";
  EXPECT_EQ(checked, 2L * 3 * 5 * 7 * 2 * 2 * 16 * 2);
}

}  // namespace
