// Writes the chapter's concept figure, computed by data_path_svg() from the model's minimal_path():
//   tma_1d_figures DIR   ->  DIR/tma_data_path.svg
//   build/06_tma_1d/tma_1d_figures 06_tma_1d/figures   (regenerates the committed figure)
// The host test HostFigures compares the committed file with the same function, byte for byte,
// and runs its command line.
#include <string>
#include <vector>

#include "course/figures.hpp"
#include "tma_1d_model.hpp"

// The program's figures: what course::figures_main() writes and HostFigures checks.
constexpr const char* kFiguresProgram = "tma_1d_figures";
inline std::vector<course::Figure> chapter_figures() {
  return {{"tma_data_path.svg", [] { return data_path_svg(minimal_path()); }}};
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) {
  return course::figures_main(kFiguresProgram, chapter_figures(), argc, argv);
}
#endif
