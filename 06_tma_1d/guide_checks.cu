// What the compiler does with three things the guide's TMA section writes or lists (4.11.2):
// compiled by CTest only (06_tma_1d/CMakeLists.txt), never linked into a program.
//   GUIDE_ARCH_CHECK_ALONE      the guide's availability check with nothing included before it:
//                               __CUDA_MINIMUM_ARCH__ is defined by <nv/target>, so for sm_80 the
//                               check is silently false and the file compiles.
//   GUIDE_ARCH_CHECK_NV_TARGET  the same check after <nv/target>: for sm_80 it fires.
//   GUIDE_GLOBAL_TO_GLOBAL      a bulk copy global -> global (the guide's table lists the
//                               direction without an API): no cuda::ptx::cp_async_bulk overload.
//   GUIDE_SHARED_TO_SHARED      a bulk copy shared::cta -> shared::cta: no overload either.
// With none of them defined the file compiles for sm_90: the refusals come from the spellings.
#if defined(GUIDE_ARCH_CHECK_NV_TARGET)
#include <nv/target>
#endif
#if defined(GUIDE_ARCH_CHECK_ALONE) || defined(GUIDE_ARCH_CHECK_NV_TARGET)
#if defined(__CUDA_MINIMUM_ARCH__) && __CUDA_MINIMUM_ARCH__ < 900
static_assert(false, "Device code is being compiled with older architectures that are incompatible with TMA.");
#endif  // __CUDA_MINIMUM_ARCH__
__global__ void arch_check_kernel() {}
#else
#include <cuda/ptx>

#include <cstdint>

namespace ptx = cuda::ptx;

__global__ void bulk_copy_directions_kernel(std::uint32_t* gmem_a, std::uint32_t* gmem_b) {
  __shared__ alignas(16) std::uint32_t smem_a[256], smem_b[256];
  __shared__ std::uint64_t bar;
  constexpr std::uint32_t kBytes = sizeof(smem_a);
#if defined(GUIDE_GLOBAL_TO_GLOBAL)
  ptx::cp_async_bulk(ptx::space_global, ptx::space_global, gmem_b, gmem_a, kBytes);
#elif defined(GUIDE_SHARED_TO_SHARED)
  ptx::cp_async_bulk(ptx::space_shared, ptx::space_shared, smem_b, smem_a, kBytes, &bar);
#else
  // The directions that exist: global -> shared::cta (on a barrier), shared::cta -> global.
  ptx::cp_async_bulk(ptx::space_shared, ptx::space_global, smem_a, gmem_a, kBytes, &bar);
  ptx::cp_async_bulk(ptx::space_global, ptx::space_shared, gmem_b, smem_b, kBytes);
#endif
}
#endif
