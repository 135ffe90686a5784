// Writes one SVG figure per swizzle mode, computed by swizzle_svg() from swizzled_chunk():
//   swizzle_figures DIR   ->  DIR/swizzle_none.svg, swizzle_32B.svg, swizzle_64B.svg, swizzle_128B.svg
//   build/08_swizzle/swizzle_figures 08_swizzle/figures   (regenerates the committed figures)
// The host tests HostFigures compare the committed files with the same function, byte for byte,
// and run figures_main() with the arguments below.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "swizzle_model.hpp"

// The program without its process: arguments in, exit code out (0 written or --help, 1 could not
// write, 2 bad command line), messages on `out` and `err`.
inline int figures_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const char* const usage = "usage: swizzle_figures DIR\n"
                            "  writes DIR/swizzle_<mode>.svg for the modes none, 32B, 64B and 128B\n";
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    out << usage;
    return 0;
  }
  if (args.size() != 1) {
    err << "swizzle_figures: expected one argument, the folder to write into (got " << args.size() << ")\n" << usage;
    return 2;
  }
  const std::string& dir = args[0];
  if (!dir.empty() && dir[0] == '-') {
    err << "swizzle_figures: unknown option '" << dir << "': the only option is --help; the argument is a folder\n";
    return 2;
  }
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) {
    err << "swizzle_figures: no folder '" << dir << "' to write into (create it first)\n";
    return 1;
  }
  for (Swizzle mode : kAllSwizzles) {
    const std::string path = dir + "/swizzle_" + swizzle_tag(mode) + ".svg";
    std::ofstream file(path, std::ios::binary);
    file << swizzle_svg(mode);
    if (!file) {
      err << "swizzle_figures: cannot write " << path << '\n';
      return 1;
    }
    out << "wrote " << path << '\n';
  }
  return 0;
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) {
  return figures_main(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
}
#endif
