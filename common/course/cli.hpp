/// @file
/// @brief The command line every chapter program shares.
///
/// ```
/// --help            list the variants and options
/// --variant=NAME    run one variant (default: all)
/// --size=N[K|M|G]   input size in bytes; K/KiB, M/MiB, G/GiB are powers of 1024
/// --iters=N         timed repetitions for --bench
/// --bench           time every variant after verifying it
/// --format=F        text (default), csv or json
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
};

/// Parses "4096", "64K", "4MiB", "1G" (powers of 1024). Throws UsageError naming the rule.
inline std::size_t parse_size(const std::string& text) {
  const std::string rule = "--size takes a positive byte count with an optional unit K/KiB, M/MiB or G/GiB (got '" +
                           text + "')";
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
  if (scale == 0 || number == 0) throw UsageError(rule);
  if (number > std::numeric_limits<std::uint64_t>::max() / scale) throw UsageError(rule);
  return static_cast<std::size_t>(number * scale);
}

/// "4.00 MiB" style rendering for reports.
inline std::string format_size(std::size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 3) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.2f %s", value, units[unit]);
  return text;
}

/// Parses @p args (without the program name). Throws UsageError naming the broken rule.
inline Options parse_options(const std::vector<std::string>& args) {
  Options opts;
  for (const std::string& arg : args) {
    const std::size_t eq = arg.find('=');
    const std::string key = arg.substr(0, eq);
    const bool has_value = eq != std::string::npos;
    const std::string value = has_value ? arg.substr(eq + 1) : "";
    auto need_value = [&] {
      if (!has_value || value.empty()) throw UsageError(key + " needs a value: " + key + "=...");
    };
    if (key == "--help" || key == "-h") {
      opts.help = true;
    } else if (key == "--bench" && !has_value) {
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
        throw UsageError("--iters takes a whole number from 1 to 999999 (got '" + value + "')");
      }
      opts.iters = std::stoi(value);
    } else if (key == "--format") {
      need_value();
      if (value == "text") {
        opts.format = Format::text;
      } else if (value == "csv") {
        opts.format = Format::csv;
      } else if (value == "json") {
        opts.format = Format::json;
      } else {
        throw UsageError("--format is one of text, csv, json (got '" + value + "')");
      }
    } else {
      throw UsageError("unknown option '" + arg + "'; options are --help, --variant=NAME, --size=N, --iters=N, " +
                       "--bench, --format=text|csv|json");
    }
  }
  return opts;
}

}  // namespace course
