// 12_tma_multicast lab: the lesson's kernel in other cluster shapes.
//
// The lesson compares no multicast with 2 x 1 and 2 x 2 clusters. This program asks "what if",
// one change per row, each row verified bit for bit before it is timed:
//   multicast_4x2: an 8-block cluster, the portable maximum; each block loads 6 KiB of the
//     16 KiB that land in it per k-tile (37.5 %);
//   no_multicast_1x1, no_multicast_4x2: no multicast in clusters of 1 and of 8 blocks: what the
//     cluster alone costs the product, without a single byte shared.
// Every row is the lesson's gemm_kernel with another ClusterPlan (no copy of the kernel).
// Hardware: compute capability 9.0 exactly, built for sm_90a, as the lesson.
// Run: build/12_tma_multicast/tma_multicast_lab [--bench] [--variant=NAME] [--size=BYTES_OF_C]
#include <cstdio>

#include "tma_multicast.cu"  // the lesson: the kernel, its launcher, Problem, verify

namespace lab {

// How many clusters of a plan's kernel fit on the GPU at once (shared memory, threads, shape).
template <class Plan>
int resident_clusters() {
  COURSE_CHECK(cudaFuncSetAttribute(gemm_kernel<Plan>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(kDynamicSmemBytes)));
  cudaLaunchConfig_t config = {};
  // One cluster's worth of blocks: the kernel's __cluster_dims__ gives the shape.
  config.gridDim =
      dim3(static_cast<unsigned>(Plan::kShape.x), static_cast<unsigned>(Plan::kShape.y));
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = kDynamicSmemBytes;
  int clusters = 0;
  COURSE_CHECK(cudaOccupancyMaxActiveClusters(&clusters, gemm_kernel<Plan>, &config));
  return clusters;
}

struct Variant {
  const char* name;
  const char* summary;
  ClusterShape cluster;  // the plan's shape, for the tensor maps' boxes
  ::Launch launch;
  int (*resident_clusters)();  // clusters of the row's kernel that fit on the GPU at once
};
template <class Plan>
constexpr Variant row(const char* name, const char* summary) {  // the lesson's kernel, another plan
  return {name, summary, Plan::kShape, &launch_gemm<Plan>, &resident_clusters<Plan>};
}
const Variant kVariants[] = {
    row<ClusterPlan<4, 2, true>>(
        "multicast_4x2", "8-block clusters: a quarter of each A tile, half of each B tile"),
    row<ClusterPlan<1, 1, false>>(
        "no_multicast_1x1", "no multicast and no cluster to speak of: clusters of 1 block"),
    row<ClusterPlan<4, 2, false>>(
        "no_multicast_4x2", "8-block clusters without multicast: what the cluster alone costs"),
};

// The lesson's check: poison, launch, synchronise, compare bit-exactly (guard bands included).
course::Comparison verify(const Variant& v, Problem& p) {
  return ::verify({v.name, v.summary, v.cluster, v.launch}, p);
}

void run(const course::Options& opts, course::Report& report) {
  std::ostream& log = opts.format == course::Format::text ? std::cout : std::cerr;
  int sms = 0, device = 0;
  COURSE_CHECK(cudaGetDevice(&device));
  COURSE_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  Problem problem({static_cast<int>(opts.size_bytes / kRowBytes), kDefaultN, kDefaultK});
  for (const Variant& v : kVariants) {
    if (!course::selected(opts, v.name)) continue;
    // How many clusters fit at once: a limit that neither the timings nor the L2 counters show.
    const int clusters = v.resident_clusters(), blocks = clusters * v.cluster.x * v.cluster.y;
    char line[160];
    std::snprintf(line, sizeof line, "  %s: %d clusters fit at once: %d blocks, %.2f per SM\n",
                  v.name, clusters, blocks, double(blocks) / sms);
    log << line;
    const GemmMaps maps = problem.maps(v.cluster);  // encoded once, outside the timed launches
    course::check_and_time(
        opts, report, v.name, [&] { return verify(v, problem); },
        [&] { v.launch(maps, problem.gmem_c.data(), problem.shape); },
        problem.compulsory_bytes());  // A and B read once, C written once, as in the lesson
  }
}

course::ChapterInfo chapter_info() {
  course::ChapterInfo info = ::chapter_info();  // the lesson's requirement, sizes and size rule
  info.program = "tma_multicast_lab";
  info.title = "12 tma_multicast lab: the lesson's kernel in other cluster shapes";
  info.explanation =
      "The lesson's matrix product with one thing changed per row: an 8-block cluster (4 x 2)\n"
      "with multicast, and clusters of 1 and of 8 blocks without it. N = K = 1024; --size is\n"
      "the bytes of C (M rows of 4 KiB).";
  info.host_model = [](std::ostream& out) {  // every row's masks, counts and share of the L2
    print_tile_summary(out, kStages);
    for (const Variant& v : kVariants) print_cluster_plan(out, v.name, v.cluster);
  };
  return info;
}

}  // namespace lab

#ifndef COURSE_NO_LAB_MAIN
int main(int argc, char** argv) {
  return course::chapter_main(argc, argv, lab::chapter_info(), lab::kVariants, lab::run);
}
#endif
