// Writes the chapter's concept figure, the full/empty hand-off of a ring of two buffers over five
// batches, computed by handoff_svg() from run_ring() (warp_specialized_model.hpp):
//   warp_specialized_figures DIR   ->  DIR/handoff_05_warp_specialized.svg
//   build/05_warp_specialized/warp_specialized_figures 05_warp_specialized/figures
// The host test HostFigures compares the committed file with the same function, byte for byte.
#include <string>
#include <vector>

#include "course/figures.hpp"
#include "warp_specialized_model.hpp"

constexpr int kFigureStages = 2;   // the lesson's ring
constexpr int kFigureBatches = 5;  // two rounds and the start of a third

// The program's figures: what course::figures_main() writes and HostFigures checks.
constexpr const char* kFiguresProgram = "warp_specialized_figures";
inline std::vector<course::Figure> chapter_figures() {
  return {{"handoff_05_warp_specialized.svg",
           [] { return handoff_svg<kFigureStages>(kFigureBatches); }}};
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) {
  return course::figures_main(kFiguresProgram, chapter_figures(), argc, argv);
}
#endif
