/// @file
/// @brief The command line of a chapter's figure program: `PROGRAM DIR` writes each of the
/// chapter's figures, drawn by the chapter's functions from its host model, into DIR.
///
/// The drawings are the chapter's; this is the plumbing around them (arguments, files,
/// messages, exit codes). A chapter's program lists its figures and calls figures_main():
///
///     inline std::vector<course::Figure> chapter_figures() { return {{"a.svg", a_svg}}; }
///     int main(int argc, char** argv) {
///       return course::figures_main("topic_figures", chapter_figures(), argc, argv);
///     }
///
/// Its test checks the committed files with course::figures_are_fresh() (course/testing.hpp).
#pragma once

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <system_error>
#include <vector>

namespace course {

/// One figure of a program: the file it is written to, and the function that draws it.
struct Figure {
  std::string file;                   // a name inside the folder, e.g. "copy_paths.svg"
  std::function<std::string()> draw;  // the whole SVG document
};

/// The help text: "usage: PROGRAM DIR" and the files it writes.
inline std::string figures_usage(const std::string& program, const std::vector<Figure>& figures) {
  std::string usage = "usage: " + program + " DIR\n  writes ";
  for (std::size_t i = 0; i < figures.size(); ++i) {
    usage += (i == 0 ? "DIR/" : ", DIR/") + figures[i].file;
  }
  return usage + "\n";
}

/// The program without its process: arguments in, exit code out (0 written or --help, 1 no
/// folder or could not write, 2 bad command line), messages on @p out and @p err.
inline int figures_main(const std::string& program, const std::vector<Figure>& figures,
                        const std::vector<std::string>& args, std::ostream& out,
                        std::ostream& err) {
  const std::string usage = figures_usage(program, figures);
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    out << usage;
    return 0;
  }
  if (args.size() != 1) {
    err << program << ": expected one argument, the folder to write into (got " << args.size()
        << ")\n"
        << usage;
    return 2;
  }
  const std::string& dir = args[0];
  if (!dir.empty() && dir[0] == '-') {
    err << program << ": unknown option '" << dir
        << "': the only option is --help; the argument is a folder\n";
    return 2;
  }
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) {
    err << program << ": no folder '" << dir << "' to write into (create it first)\n";
    return 1;
  }
  for (const Figure& figure : figures) {
    const std::string path = dir + "/" + figure.file;
    std::ofstream file(path, std::ios::binary);
    file << figure.draw();
    if (!file) {
      err << program << ": cannot write " << path << '\n';
      return 1;
    }
    out << "wrote " << path << '\n';
  }
  return 0;
}

/// main() of a figure program: the process's arguments, standard output and error.
inline int figures_main(const std::string& program, const std::vector<Figure>& figures, int argc,
                        char** argv) {
  return figures_main(program, figures, std::vector<std::string>(argv + 1, argv + argc),
                      std::cout, std::cerr);
}

/// Where a file's text and a drawing first differ: "line N: the file has `...`, the drawing `...`"
/// (a line that one of them lacks is shown as "(none)"); "" when they are equal.
inline std::string first_differing_line(const std::string& file, const std::string& drawing) {
  if (file == drawing) return "";
  std::size_t start = 0;
  for (int line = 1;; ++line) {
    const std::size_t end_a = file.find('\n', start), end_b = drawing.find('\n', start);
    const std::string a = start < file.size() ? file.substr(start, end_a - start) : "(none)";
    const std::string b = start < drawing.size() ? drawing.substr(start, end_b - start) : "(none)";
    if (a != b || end_a != end_b) {
      return "line " + std::to_string(line) + ": the file has `" + a + "`, the drawing `" + b +
             "`" + (a == b ? " (one of them ends there without a newline)" : "");
    }
    start = end_a + 1;  // the two agree up to here, newline included
  }
}

}  // namespace course
