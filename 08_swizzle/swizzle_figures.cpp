// Writes one SVG figure per swizzle mode, computed by swizzle_svg() from swizzled_chunk():
//   swizzle_figures DIR   ->  DIR/swizzle_none.svg, swizzle_32B.svg, swizzle_64B.svg,
//                             swizzle_128B.svg
//   build/08_swizzle/swizzle_figures 08_swizzle/figures   (regenerates the committed figures)
// The host tests HostFigures compare the committed files with the same function, byte for byte,
// and run its command line.
#include <string>
#include <vector>

#include "course/figures.hpp"
#include "swizzle_model.hpp"

// The program's figures, one a mode: what course::figures_main() writes and HostFigures checks.
constexpr const char* kFiguresProgram = "swizzle_figures";
inline std::vector<course::Figure> chapter_figures() {
  std::vector<course::Figure> figures;
  for (Swizzle mode : kAllSwizzles) {
    const std::string file = "swizzle_" + swizzle_tag(mode) + ".svg";
    figures.push_back({file, [mode] { return swizzle_svg(mode); }});
  }
  return figures;
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) {
  return course::figures_main(kFiguresProgram, chapter_figures(), argc, argv);
}
#endif
