/// @file
/// @brief Reading the code the compiler emitted, for a chapter's codegen tests: the PTX the build
/// writes for every program, and the machine code (SASS) of the running test executable.
///
/// This is the one way the course checks emitted code: a `HostCodegen` test reads the PTX or the
/// SASS of one kernel and expects the instructions the chapter teaches, and not the ones it
/// replaces. PTX tests run on every machine (the build writes the PTX without a GPU); SASS tests
/// need `cuobjdump` and machine code for the architecture, and skip with the reason otherwise.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "course/testing.hpp"

namespace course {

/// The PTX of @p program (a lesson or lab of the chapter under test) for compute capability
/// @p arch ("80", "90", "90a"), as the build wrote it; "" when the file is missing.
/// Needs COURSE_PTX_DIR, which the chapter helper defines for test executables.
inline std::string chapter_ptx(const std::string& program, const std::string& arch) {
#ifdef COURSE_PTX_DIR
  return read_text_file(std::string(COURSE_PTX_DIR) + "/" + program + ".compute_" + arch + ".ptx");
#else
  (void)program, (void)arch;
  return "";
#endif
}

/// The text of the first PTX entry whose (mangled) name contains @p name_part: from its
/// `.entry` line up to the next function or entry (or the end); "" when there is none.
/// (A closing brace cannot mark the end: inline assembly puts braces at the start of lines.)
inline std::string ptx_kernel_body(const std::string& ptx, const std::string& name_part) {
  std::size_t pos = 0;
  while ((pos = ptx.find(".entry ", pos)) != std::string::npos) {
    const std::size_t line_end = ptx.find('\n', pos);
    if (ptx.substr(pos, line_end - pos).find(name_part) != std::string::npos) {
      std::size_t end = std::string::npos;
      for (const char* next : {"\n.visible ", "\n.entry ", "\n.func ", "\n.weak ", "\n// .globl"}) {
        const std::size_t found = ptx.find(next, line_end);
        if (found < end) end = found;
      }
      return ptx.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    }
    pos = line_end;
  }
  return "";
}

/// The instructions of a PTX kernel body, in order, without their operands: what a test compares
/// to say that two kernels compile to the same code (comments, directives, labels and the
/// braces of blocks are left out).
inline std::vector<std::string> ptx_instructions(const std::string& body) {
  std::vector<std::string> opcodes;
  std::istringstream lines(body);
  for (std::string line; std::getline(lines, line);) {
    const std::size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line.compare(first, 2, "//") == 0 || line[first] == '.' || line[first] == '$' ||
        line[first] == '{' || line[first] == '}' || line[first] == ')') {
      continue;  // blank, comment, directive, label, a block's braces or the end of the parameter list
    }
    opcodes.push_back(line.substr(first, line.find_first_of(" \t;", first) - first));
  }
  return opcodes;
}

/// How many times the regular expression @p pattern (ECMAScript) matches in @p code.
inline int count_matches(const std::string& code, const std::string& pattern) {
  const std::regex re(pattern);
  return static_cast<int>(std::distance(std::sregex_iterator(code.begin(), code.end(), re), std::sregex_iterator()));
}

/// The cuobjdump to run: COURSE_CUOBJDUMP when set (and nothing else is tried: how a machine
/// without the tool is reproduced), else the toolkit's found at configure time, else PATH's.
inline std::string cuobjdump_tool() {
  if (const char* chosen = std::getenv("COURSE_CUOBJDUMP")) return chosen;
#ifdef COURSE_CUOBJDUMP
  if (std::FILE* probe = std::fopen(COURSE_CUOBJDUMP, "rb")) {
    std::fclose(probe);
    return COURSE_CUOBJDUMP;
  }
#endif
  return "cuobjdump";  // not where the toolkit was found at configure time: try PATH
}

/// Whether cuobjdump_tool() runs here (`--version` exits 0; a missing tool exits 127). Asked
/// once per process.
inline bool cuobjdump_runs() {
  static const bool runs = [] {
    const std::string command = "'" + cuobjdump_tool() + "' --version >/dev/null 2>&1";
    return std::system(command.c_str()) == 0;
  }();
  return runs;
}

/// The machine code of this executable for @p sm ("sm_90"), from `cuobjdump -sass`; nothing when
/// cuobjdump does not run here or the executable holds no machine code for that architecture.
inline std::optional<std::string> own_sass(const std::string& sm) {
  if (!cuobjdump_runs()) return std::nullopt;
  // The executable's own path, read here: inside the shell that popen starts, /proc/self/exe
  // would name the shell.
  char self[4096] = {};
  const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0) return std::nullopt;
  const std::string command =
      "'" + cuobjdump_tool() + "' -sass -arch " + sm + " '" + std::string(self, length) + "' 2>/dev/null";
  std::FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::string text;
  char buffer[65536];
  std::size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) text.append(buffer, got);
  const int status = pclose(pipe);
  if (status != 0 || text.find("Function : ") == std::string::npos) return std::nullopt;
  return text;
}

/// The name under which cuobjdump files this executable's machine code for compute capability 9.0
/// built as `sm_90a` (architecture-specific features, e.g. multicast, `setmaxnreg`): "sm_90a"
/// where cuobjdump lists it so, "sm_90" for cuobjdump releases that file it under the plain name.
/// Asked once per process (each question runs cuobjdump over the executable).
inline const char* sm90a_sass_name() {
  static const char* const name = own_sass("sm_90a") ? "sm_90a" : "sm_90";
  return name;
}

/// The SASS of the first kernel whose (mangled) name contains @p name_part: from its
/// `Function :` line up to the next one (or the end); "" when there is none.
inline std::string sass_kernel_body(const std::string& sass, const std::string& name_part) {
  std::size_t pos = 0;
  while ((pos = sass.find("Function : ", pos)) != std::string::npos) {
    const std::size_t line_end = sass.find('\n', pos);
    if (sass.substr(pos, line_end - pos).find(name_part) != std::string::npos) {
      const std::size_t end = sass.find("Function : ", line_end);
      return sass.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    }
    pos = line_end;
  }
  return "";
}

}  // namespace course

/// In a codegen test: declares `const std::string name` holding this executable's SASS for
/// @p sm, or skips the test, saying why, when there is none to read.
#define COURSE_SASS_OR_SKIP(name, sm)                                                                    \
  const std::optional<std::string> name##_found = ::course::own_sass(sm);                               \
  if (!name##_found && !::course::cuobjdump_runs())                                                     \
    GTEST_SKIP() << "no " << (sm) << " machine code to read: cuobjdump is not installed";                \
  if (!name##_found)                                                                                     \
    GTEST_SKIP() << "no " << (sm) << " machine code to read: the build has no " << (sm)                  \
                 << " target (COURSE_CUDA_ARCHITECTURES)";                                               \
  const std::string name = *name##_found
