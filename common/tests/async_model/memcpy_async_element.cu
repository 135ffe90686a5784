// Compiled, never run, by the tests async_model.memcpy_async.* (common/tests/async_model/CMakeLists.txt):
// one memcpy_async call per API, with an element type that is trivially copyable or not.
//
//   -DCOPY_API=1  cuda::memcpy_async completing on a cuda::barrier
//   -DCOPY_API=2  cuda::memcpy_async completing on a thread-scope cuda::pipeline
//   -DCOPY_API=3  cooperative_groups::memcpy_async + cooperative_groups::wait
//   -DELEMENT_HAS_COPY_CONSTRUCTOR  the element is Window, which is not trivially copyable, instead of
//                                   PlainWindow (docs/async_model.md says why that matters and which
//                                   of the three calls the compiler rejects)
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda/barrier>
#include <cuda/pipeline>

#include <type_traits>

#pragma nv_diag_suppress static_var_with_dynamic_init

namespace cg = cooperative_groups;

constexpr int kWindowElems = 4;

// Trivially copyable: four values and an index; a byte copy is a copy.
struct PlainWindow {
  float values[kWindowElems];
  int newest;  // index of the newest value
};

/// [window]
// Not trivially copyable: `newest` points into the object itself, so a copy must re-aim it at
// the copy's own values. A byte copy (what LDGSTS or TMA does) would leave it pointing into the
// source, here global memory.
struct Window {
  float values[kWindowElems];
  const float* newest;
  Window() = default;
  __host__ __device__ Window(const Window& other) : newest(values + (other.newest - other.values)) {
    for (int i = 0; i < kWindowElems; ++i) values[i] = other.values[i];
  }
  __host__ __device__ Window& operator=(const Window& other) {
    for (int i = 0; i < kWindowElems; ++i) values[i] = other.values[i];
    newest = values + (other.newest - other.values);
    return *this;
  }
};
/// [window]

#ifdef ELEMENT_HAS_COPY_CONSTRUCTOR
using Element = Window;
static_assert(!std::is_trivially_copyable_v<Element>, "the counterexample must not be trivially copyable");
#else
using Element = PlainWindow;
static_assert(std::is_trivially_copyable_v<Element>, "the control must be trivially copyable");
#endif

constexpr int kBlockThreads = 64;

__global__ void copy_elements_kernel(const Element* gmem_in, float* gmem_out) {
  __shared__ Element smem_elements[kBlockThreads];
  cg::thread_block block = cg::this_thread_block();
#if COPY_API == 1
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  if (block.thread_rank() == 0) init(&bar, block.size());
  block.sync();  // the barrier is initialised before anyone arrives on it
  cuda::memcpy_async(block, smem_elements, gmem_in, sizeof(smem_elements), bar);
  bar.arrive_and_wait();  // every copy bound to this phase has landed
#elif COPY_API == 2
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  pipe.producer_acquire();
  cuda::memcpy_async(&smem_elements[threadIdx.x], &gmem_in[threadIdx.x], sizeof(Element), pipe);
  pipe.producer_commit();  // this thread's copy is one commit group
  pipe.consumer_wait();    // this thread's group has landed
  block.sync();            // and everyone else's
#elif COPY_API == 3
  cg::memcpy_async(block, smem_elements, gmem_in, sizeof(smem_elements));
  cg::wait(block);  // this thread's copies landed, then the block joins
#else
#error "COPY_API must be 1 (cuda::barrier), 2 (cuda::pipeline) or 3 (cooperative_groups)"
#endif
  gmem_out[threadIdx.x] = smem_elements[threadIdx.x].values[0];
}
