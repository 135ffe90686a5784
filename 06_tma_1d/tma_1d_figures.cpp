// Writes the chapter's concept figure, computed by data_path_svg() from the model's minimal_path():
//   tma_1d_figures DIR   ->  DIR/tma_data_path.svg
//   build/06_tma_1d/tma_1d_figures 06_tma_1d/figures   (regenerates the committed figure)
// The host test HostFigures compares the committed file with the same function, byte for byte,
// and runs figures_main() with the arguments below.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "tma_1d_model.hpp"

// The program without its process: arguments in, exit code out (0 written or --help, 1 could not
// write, 2 bad command line), messages on `out` and `err`.
inline int figures_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const char* const usage = "usage: tma_1d_figures DIR\n  writes DIR/tma_data_path.svg\n";
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    out << usage;
    return 0;
  }
  if (args.size() != 1) {
    err << "tma_1d_figures: expected one argument, the folder to write into (got " << args.size()
        << ")\n" << usage;
    return 2;
  }
  const std::string& dir = args[0];
  if (!dir.empty() && dir[0] == '-') {
    err << "tma_1d_figures: unknown option '" << dir
        << "': the only option is --help; the argument is a folder\n";
    return 2;
  }
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) {
    err << "tma_1d_figures: no folder '" << dir << "' to write into (create it first)\n";
    return 1;
  }
  const std::string path = dir + "/tma_data_path.svg";
  std::ofstream file(path, std::ios::binary);
  file << data_path_svg(minimal_path());
  if (!file) {
    err << "tma_1d_figures: cannot write " << path << '\n';
    return 1;
  }
  out << "wrote " << path << '\n';
  return 0;
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) {
  return figures_main(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
}
#endif
