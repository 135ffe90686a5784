/// @file
/// @brief The command line every chapter program shares.
///
/// ```
/// --help            list the variants and options
/// --variant=NAME    run one variant (default: all)
/// --size=N[K|M|G|T] input size in bytes; K/KiB, M/MiB, G/GiB, T/TiB are powers of 1024;
///                   at most 16 TiB (a chapter's own rule may say less)
/// --iters=N         timed repetitions, with --bench
/// --bench           time every variant after verifying it
/// --format=F        text (default), csv or json
/// --timeline=FILE   (the labs that offer it) after verifying, record the lab's ring with
///                   per-stage events and write them as CSV to FILE (course/timeline.hpp)
/// ```
#pragma once

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace course {

/// Bad command-line input; the message is one line that names the rule.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The largest --size any program accepts: 16 TiB.
constexpr std::uint64_t kMaxSizeBytes = 16ull << 40;

/// A command-line value as it is echoed in a message: at most 40 characters, the rest counted;
/// a byte outside printable ASCII (a control character, a zero-width space, a byte that is not
/// UTF-8) is written as `\xNN`, so that nothing echoed is invisible and JSON output stays valid.
inline std::string shown(const std::string& value) {
  constexpr std::size_t kShown = 40;
  std::string visible;
  for (std::size_t i = 0; i < value.size() && i < kShown; ++i) {
    const auto byte = static_cast<unsigned char>(value[i]);
    if (byte >= 0x20 && byte < 0x7f) {
      visible += value[i];
    } else {
      static const char kHex[] = "0123456789abcdef";
      visible += std::string("\\x") + kHex[byte >> 4] + kHex[byte & 15];
    }
  }
  if (value.size() <= kShown) return visible;
  return visible + "... (" + std::to_string(value.size()) + " characters)";
}

/// Output format of a chapter's report.
enum class Format { text, csv, json };

/// Parsed command line.
struct Options {
  bool help = false;
  std::string variant;           ///< empty: every variant
  std::size_t size_bytes = 0;    ///< 0 until resolved: the chapter's default for the mode
  bool size_given = false;
  int iters = 20;
  bool bench = false;
  Format format = Format::text;
  std::string timeline;          ///< --timeline=FILE: where the recorded events go; empty: none
};

/// Parses "4096", "64K", "4MiB", "1G", "2T" (powers of 1024), at most 16 TiB. Throws UsageError
/// naming the rule.
inline std::size_t parse_size(const std::string& text) {
  const std::string rule = "--size takes a positive byte count with an optional unit K/KiB, M/MiB, G/GiB or T/TiB, "
                           "at most 16 TiB (got '" + shown(text) + "')";
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0 || digits > 15) throw UsageError(rule);
  const std::uint64_t number = std::stoull(text.substr(0, digits));
  const std::string unit = text.substr(digits);
  std::uint64_t scale = 0;
  if (unit.empty() || unit == "B") scale = 1;
  if (unit == "K" || unit == "k" || unit == "KiB") scale = 1ull << 10;
  if (unit == "M" || unit == "m" || unit == "MiB") scale = 1ull << 20;
  if (unit == "G" || unit == "g" || unit == "GiB") scale = 1ull << 30;
  if (unit == "T" || unit == "t" || unit == "TiB") scale = 1ull << 40;
  if (scale == 0 || number == 0) throw UsageError(rule);
  if (number > kMaxSizeBytes / scale) throw UsageError(rule);
  return static_cast<std::size_t>(number * scale);
}

/// "4.00 MiB" style rendering for reports.
inline std::string format_size(std::size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.2f %s", value, units[unit]);
  return text;
}

/// The --format an argument list asks for, if it names a valid one (the last wins), so that even
/// a report of bad input can be written in that format.
inline Format requested_format(const std::vector<std::string>& args) {
  Format format = Format::text;
  for (const std::string& arg : args) {
    if (arg == "--format=csv") format = Format::csv;
    if (arg == "--format=json") format = Format::json;
    if (arg == "--format=text") format = Format::text;
  }
  return format;
}

/// Parses @p args (without the program name). Throws UsageError naming the broken rule: an
/// unknown option, a bad value, an option given twice, or --iters without --bench. Whether the
/// program offers --timeline is the chapter's to say (resolve_options in course/chapter.hpp).
inline Options parse_options(const std::vector<std::string>& args) {
  Options opts;
  std::vector<std::string> seen;
  bool iters_given = false;
  for (const std::string& arg : args) {
    const std::size_t eq = arg.find('=');
    const std::string key = arg.substr(0, eq);
    const bool has_value = eq != std::string::npos;
    const std::string value = has_value ? arg.substr(eq + 1) : "";
    auto need_value = [&] {
      if (!has_value || value.empty()) throw UsageError(shown(key) + " needs a value: " + shown(key) + "=...");
    };
    const std::string canonical = key == "-h" ? "--help" : key;
    for (const std::string& earlier : seen) {
      if (earlier == canonical) throw UsageError(canonical + " is given twice: each option may appear once");
    }
    seen.push_back(canonical);
    if ((key == "--bench" || key == "--help" || key == "-h") && has_value) {
      throw UsageError(key + " takes no value: write " + key + ", not " + shown(arg));
    } else if (key == "--help" || key == "-h") {
      opts.help = true;
    } else if (key == "--bench") {
      opts.bench = true;
    } else if (key == "--variant") {
      need_value();
      opts.variant = value;
    } else if (key == "--size") {
      need_value();
      opts.size_bytes = parse_size(value);
      opts.size_given = true;
    } else if (key == "--iters") {
      need_value();
      const bool digits_only = value.find_first_not_of("0123456789") == std::string::npos && value.size() <= 6;
      if (!digits_only || std::stoi(value) < 1) {
        throw UsageError("--iters takes a whole number from 1 to 999999 (got '" + shown(value) + "')");
      }
      opts.iters = std::stoi(value);
      iters_given = true;
    } else if (key == "--format") {
      need_value();
      if (value == "text") {
        opts.format = Format::text;
      } else if (value == "csv") {
        opts.format = Format::csv;
      } else if (value == "json") {
        opts.format = Format::json;
      } else {
        throw UsageError("--format is one of text, csv, json (got '" + shown(value) + "')");
      }
    } else if (key == "--timeline") {
      if (!has_value || value.empty()) {
        throw UsageError("--timeline takes the name of the CSV file to write: --timeline=FILE");
      }
      opts.timeline = value;
    } else {
      throw UsageError("unknown option '" + shown(arg) + "'; options are --help, --variant=NAME, --size=N, " +
                       "--iters=N, --bench, --format=text|csv|json");
    }
  }
  if (iters_given && !opts.bench && !opts.help) {
    throw UsageError("--iters counts timed runs, so it needs --bench");
  }
  return opts;
}

}  // namespace course
