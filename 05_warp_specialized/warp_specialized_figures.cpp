// Writes the chapter's concept figure, the full/empty hand-off of a ring of two buffers over five
// batches, computed by handoff_svg() from run_ring() (warp_specialized_model.hpp):
//   warp_specialized_figures DIR   ->  DIR/handoff_05_warp_specialized.svg
//   build/05_warp_specialized/warp_specialized_figures 05_warp_specialized/figures
// The host test HostFigures compares the committed file with the same function, byte for byte.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "warp_specialized_model.hpp"

constexpr int kFigureStages = 2;   // the lesson's ring
constexpr int kFigureBatches = 5;  // two rounds and the start of a third
constexpr const char* kFigureName = "handoff_05_warp_specialized.svg";

inline std::string figure_svg() { return handoff_svg<kFigureStages>(kFigureBatches); }

// The program without its process: arguments in, exit code out (0 written or --help, 1 could not
// write, 2 bad command line), messages on `out` and `err`.
inline int figures_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const char* const usage = "usage: warp_specialized_figures DIR\n"
                            "  writes DIR/handoff_05_warp_specialized.svg\n";
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    out << usage;
    return 0;
  }
  if (args.size() != 1) {
    err << "warp_specialized_figures: expected one argument, the folder to write into (got " << args.size()
        << ")\n"
        << usage;
    return 2;
  }
  const std::string& dir = args[0];
  if (!dir.empty() && dir[0] == '-') {
    err << "warp_specialized_figures: unknown option '" << dir << "': the only option is --help\n";
    return 2;
  }
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) {
    err << "warp_specialized_figures: no folder '" << dir << "' to write into (create it first)\n";
    return 1;
  }
  const std::string path = dir + "/" + kFigureName;
  std::ofstream file(path, std::ios::binary);
  file << figure_svg();
  if (!file) {
    err << "warp_specialized_figures: cannot write " << path << '\n';
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
