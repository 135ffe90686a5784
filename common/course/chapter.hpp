/// @file
/// @brief The shared entry point of every chapter program: options, gating, outcome, report.
///
/// A chapter supplies a ChapterInfo, its table of named variants and a `run`
/// function that verifies (and with `--bench` times) the selected variants,
/// adding one Row per variant to the Report. chapter_main() does the rest:
/// parses the command line, prints help from the variant table, skips with a
/// reason when the GPU lacks what the chapter needs (after printing what the
/// chapter would have shown), and turns the report into an exit code.
#pragma once

#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "course/bandwidth.hpp"
#include "course/check.hpp"
#include "course/cli.hpp"
#include "course/compare.hpp"
#include "course/device.hpp"
#include "course/device_setup.hpp"
#include "course/in_flight.hpp"

namespace course {

/// Exit codes of chapter programs; kExitSkip is registered with CTest as SKIP_RETURN_CODE.
enum ExitCode : int { kExitPass = 0, kExitFail = 1, kExitUsage = 2, kExitSkip = 77 };

/// What chapter_main() needs to know about a chapter.
struct ChapterInfo {
  const char* program = "";      ///< executable name, e.g. "sync_copy"
  const char* title = "";        ///< one line, e.g. "01 sync_copy: copy-and-compute through registers"
  const char* explanation = "";  ///< what the chapter demonstrates; printed also when it has to skip
  Requirement requirement;
  std::size_t verify_bytes = 0;  ///< default --size without --bench
  std::size_t bench_bytes = 0;   ///< default --size with --bench
  /// Checks a --size value; returns the broken rule as one line, or nothing.
  std::function<std::optional<std::string>(std::size_t)> size_rule;
  /// False for chapters whose timed traffic never touches device memory (e.g. shared memory
  /// between blocks): then no note about the working set and the L2 is printed.
  bool bench_reads_device_memory = true;
  /// Optional host-side model printed before the requirement check (runs without a GPU).
  std::function<void(std::ostream&)> host_model;
  /// Optional: the lesson's launch, whose bytes in flight per SM on this device (course/in_flight.hpp)
  /// are printed after the device line beside what Little's law asks of the device.
  std::optional<InFlightLaunch> in_flight;
  /// Optional (labs only): records `timeline_variant` with per-stage events and writes the CSV
  /// that --timeline names (course/timeline.hpp); chapter_main() calls it after every selected
  /// variant verified. A program without it refuses --timeline.
  std::function<void(const Options&, std::ostream& log)> timeline;
  std::string timeline_variant;    ///< the variant whose kernel the timeline records
  std::size_t timeline_bytes = 0;  ///< default --size with --timeline (without --bench); 0: verify_bytes
};

/// A variant's name and one-line summary, as listed by --help.
struct VariantInfo {
  std::string name;
  std::string summary;
};

/// One line of a chapter's report.
struct Row {
  std::string variant;
  std::size_t size_bytes = 0;
  bool passed = false;
  std::string check;  ///< Comparison::summary() or the reason for a failure
  bool timed = false;
  double ms = 0;
  double gbps = 0;
  double ratio = 0;  ///< gbps / cudaMemcpy D2D gbps in the same process
};

/// The rows of one run, printed as text, CSV or JSON.
class Report {
 public:
  explicit Report(std::string chapter, DeviceInfo device) : chapter_(std::move(chapter)), device_(std::move(device)) {}

  /// Adds a verification result; returns the row so that a timing can be attached.
  Row& add(const std::string& variant, std::size_t size_bytes, bool passed, const std::string& check) {
    rows_.push_back(Row{variant, size_bytes, passed, check});
    return rows_.back();
  }

  /// The `cudaMemcpy` D2D bandwidth for copies of @p copy_bytes, measured once per process.
  const Bandwidth& memcpy_baseline(std::size_t copy_bytes, int iters) {
    if (!baseline_ || baseline_bytes_ != copy_bytes) {
      baseline_ = measure_memcpy_d2d(copy_bytes, iters);
      baseline_bytes_ = copy_bytes;
    }
    return *baseline_;
  }

  /// Attaches a timing to @p row; the ratio is against memcpy_baseline() of the same size.
  void attach_timing(Row& row, const Bandwidth& measured, int iters) {
    iters_ = iters;
    row.timed = true;
    row.ms = measured.ms;
    row.gbps = measured.gbps;
    row.ratio = measured.gbps / memcpy_baseline(row.size_bytes, iters).gbps;
  }

  /// The outcome printed with the rows in csv and json: "passed", "failed" (with a reason when
  /// the run stopped on an error).
  void set_outcome(std::string status, std::string reason = "") {
    status_ = std::move(status);
    reason_ = std::move(reason);
  }

  bool all_passed() const {
    for (const Row& row : rows_) {
      if (!row.passed) return false;
    }
    return !rows_.empty();
  }
  const std::vector<Row>& rows() const { return rows_; }

  void print(std::ostream& out, Format format) const {
    if (format == Format::csv) return print_csv(out);
    if (format == Format::json) return print_json(out);
    print_text(out);
  }

 private:
  void print_text(std::ostream& out) const {
    char line[256];
    std::snprintf(line, sizeof line, "%-30s %-11s %-6s %10s %9s %9s\n", "variant", "size", "check", "median ms",
                  "GB/s", "x memcpy");
    out << line;
    for (const Row& r : rows_) {
      if (r.timed) {
        std::snprintf(line, sizeof line, "%-30s %-11s %-6s %10.3f %9.1f %9.3f\n", r.variant.c_str(),
                      format_size(r.size_bytes).c_str(), r.passed ? "pass" : "FAIL", r.ms, r.gbps, r.ratio);
      } else {
        std::snprintf(line, sizeof line, "%-30s %-11s %-6s %10s %9s %9s\n", r.variant.c_str(),
                      format_size(r.size_bytes).c_str(), r.passed ? "pass" : "FAIL", "-", "-", "-");
      }
      out << line;
    }
    if (baseline_) {
      std::snprintf(line, sizeof line, "%-30s %-11s %-6s %10.3f %9.1f %9.3f\n", "cudaMemcpy D2D (baseline)",
                    format_size(baseline_bytes_).c_str(), "-", baseline_->ms, baseline_->gbps, 1.0);
      out << line;
      out << "GB/s counts bytes read plus bytes written; medians of " << iters_ << " timed runs.\n";
    }
  }

  void print_csv(std::ostream& out) const {
    out << "# " << describe(device_) << '\n';
    if (iters_ > 0) out << "# iters=" << iters_ << '\n';
    out << "chapter,variant,size_bytes,passed,median_ms,gbps,ratio_to_memcpy\n";
    for (const Row& r : rows_) {
      out << chapter_ << ',' << r.variant << ',' << r.size_bytes << ',' << (r.passed ? 1 : 0) << ',';
      if (r.timed) {
        out << r.ms << ',' << r.gbps << ',' << r.ratio;
      } else {
        out << ",,";
      }
      out << '\n';
    }
    if (baseline_) {
      out << chapter_ << ",cudaMemcpy_d2d," << baseline_bytes_ << ",1," << baseline_->ms << ',' << baseline_->gbps
          << ",1\n";
    }
    print_csv_outcome(out, status_, reason_);
  }

 public:
  /// The outcome lines that end every csv report ("# status=..." and, with a reason, "# reason=...").
  static void print_csv_outcome(std::ostream& out, const std::string& status, const std::string& reason) {
    if (status.empty()) return;
    out << "# status=" << status << '\n';
    if (reason.empty()) return;
    std::string line = reason;
    for (char& c : line) {
      if (c == '\n' || c == '\r') c = ' ';
    }
    out << "# reason=" << line << '\n';
  }

 private:


 public:
  /// @p text as the inside of a JSON string.
  static std::string json_escape(const std::string& text) {
    std::string escaped;
    for (char c : text) {
      if (c == '"' || c == '\\') escaped += '\\';
      if (c == '\n') {
        escaped += "\\n";
        continue;
      }
      if (static_cast<unsigned char>(c) < 0x20) {
        char code[8];
        std::snprintf(code, sizeof code, "\\u%04x", static_cast<unsigned>(c));
        escaped += code;
        continue;
      }
      escaped += c;
    }
    return escaped;
  }

 private:

  void print_json(std::ostream& out) const {
    out << "{\"chapter\":\"" << chapter_ << "\",\"device\":\"" << json_escape(describe(device_)) << '"';
    if (!status_.empty()) out << ",\"status\":\"" << status_ << '"';
    if (!reason_.empty()) out << ",\"reason\":\"" << json_escape(reason_) << '"';
    out << ",\"rows\":[";
    for (std::size_t i = 0; i < rows_.size(); ++i) {
      const Row& r = rows_[i];
      out << (i ? "," : "") << "{\"variant\":\"" << r.variant << "\",\"size_bytes\":" << r.size_bytes
          << ",\"passed\":" << (r.passed ? "true" : "false") << ",\"check\":\"" << json_escape(r.check) << '"';
      if (r.timed) out << ",\"median_ms\":" << r.ms << ",\"gbps\":" << r.gbps << ",\"ratio_to_memcpy\":" << r.ratio;
      out << '}';
    }
    out << ']';
    if (baseline_) {
      out << ",\"memcpy_d2d\":{\"size_bytes\":" << baseline_bytes_ << ",\"median_ms\":" << baseline_->ms
          << ",\"gbps\":" << baseline_->gbps << '}';
    }
    out << "}\n";
  }

  std::string chapter_;
  DeviceInfo device_;
  std::vector<Row> rows_;
  std::optional<Bandwidth> baseline_;
  std::size_t baseline_bytes_ = 0;
  int iters_ = 0;
  std::string status_, reason_;
};

/// The whole csv or json output of a run that ends before it has rows: a bad command line
/// ("usage") or a GPU without the chapter's feature ("skipped"), with the reason.
inline void print_outcome(std::ostream& out, Format format, const std::string& program, const std::string& status,
                          const std::string& reason) {
  if (format == Format::json) {
    out << "{\"chapter\":\"" << program << "\",\"status\":\"" << status << "\",\"reason\":\""
        << Report::json_escape(reason) << "\",\"rows\":[]}\n";
  } else if (format == Format::csv) {
    out << "chapter,variant,size_bytes,passed,median_ms,gbps,ratio_to_memcpy\n";
    Report::print_csv_outcome(out, status, reason);
  }
}

/// The most common size rule: --size must be a positive whole multiple of @p quantum bytes;
/// otherwise the chapter's one-line @p rule is the answer.
inline std::function<std::optional<std::string>(std::size_t)> whole_multiples_of(std::size_t quantum,
                                                                                std::string rule) {
  return [quantum, rule = std::move(rule)](std::size_t bytes) -> std::optional<std::string> {
    if (bytes == 0 || bytes % quantum != 0) return rule;
    return std::nullopt;
  };
}

/// Names and summaries of a chapter's variant table (any struct with `name` and `summary`).
template <class Table>
std::vector<VariantInfo> variant_infos(const Table& table) {
  std::vector<VariantInfo> infos;
  for (const auto& v : table) infos.push_back({v.name, v.summary});
  return infos;
}

/// True when @p name is selected by --variant (empty selects all).
inline bool selected(const Options& opts, const std::string& name) {
  return opts.variant.empty() || opts.variant == name;
}

/// One variant's turn in a chapter's run(): if --variant selects @p name, `verify()` runs it once
/// and returns the Comparison with the reference; with --bench, and only when the result is
/// correct, `launch()` (which enqueues one run) is timed. @p bytes_moved counts bytes read
/// plus bytes written by one run. The row reports --size, or @p row_bytes when the chapter's
/// natural size is another one (the ratio is then against a `cudaMemcpy` of that size).
template <class Verify, class Launch>
void check_and_time(const Options& opts, Report& report, const std::string& name, Verify&& verify,
                    Launch&& launch, std::size_t bytes_moved,
                    std::optional<std::size_t> row_bytes = std::nullopt) {
  if (!selected(opts, name)) return;
  const Comparison result = verify();
  Row& row = report.add(name, row_bytes.value_or(opts.size_bytes), result.ok(),
                        result.ok() ? result.summary() : result.summary() + "\n" + result.first);
  if (!opts.bench || !result.ok()) return;
  report.attach_timing(row, measure_bandwidth(launch, bytes_moved, opts.iters), opts.iters);
}

/// Prints --help: usage, the variants from the table, and the size rule.
inline void print_help(std::ostream& out, const ChapterInfo& info, const std::vector<VariantInfo>& variants) {
  out << info.title << "\n\nusage: " << info.program
      << " [--variant=NAME] [--size=N[K|M|G|T]] [--bench [--iters=N]] [--format=text|csv|json]"
      << (info.timeline ? " [--timeline=FILE]" : "") << "\n\n"
      << "variants (default: all):\n";
  for (const VariantInfo& v : variants) {
    char line[256];
    std::snprintf(line, sizeof line, "  %-28s %s\n", v.name.c_str(), v.summary.c_str());
    out << line;
  }
  out << "\n--size is in bytes (units K, M, G, T: powers of 1024) and defaults to " << format_size(info.verify_bytes)
      << " (" << format_size(info.bench_bytes) << " with --bench).\n";
  if (info.size_rule) {
    // A rule states itself in the message it gives for a size it refuses; no chapter takes 0 or 1 byte.
    std::optional<std::string> rule = info.size_rule(0);
    if (!rule) rule = info.size_rule(1);
    if (rule) out << "Rule: " << *rule << '\n';
  }
  if (info.timeline) {
    out << "--timeline=FILE: after verifying, runs " << info.timeline_variant << " once more, records\n"
        << "per-stage events (issue, land, consume, release) and writes them as CSV to FILE; draw them with\n"
        << "scripts/draw_timelines.py FILE OUT.svg. With --timeline, --size defaults to "
        << format_size(info.timeline_bytes != 0 ? info.timeline_bytes : info.verify_bytes) << ".\n";
  }
  const Requirement& need = info.requirement;
  out << "Needs: compute capability " << need.major << '.' << need.minor << (need.arch_specific ? " exactly" : " or newer")
      << " (" << need.feature << ").\n"
      << "Exit codes: 0 pass, 1 fail, 2 usage, 77 skipped (GPU lacks a feature).\n";
}

/// Parses, validates and resolves the command line against the chapter. Throws UsageError.
inline Options resolve_options(int argc, char** argv, const ChapterInfo& info,
                               const std::vector<VariantInfo>& variants) {
  Options opts = parse_options(std::vector<std::string>(argv + 1, argv + argc));
  if (!opts.variant.empty()) {
    bool known = false;
    std::string names;
    for (const VariantInfo& v : variants) {
      known = known || v.name == opts.variant;
      names += (names.empty() ? "" : ", ") + v.name;
    }
    if (!known) throw UsageError("--variant must be one of: " + names + " (got '" + shown(opts.variant) + "')");
  }
  if (!opts.timeline.empty()) {
    if (!info.timeline) {
      throw UsageError("this program records no timeline: --timeline is offered by the labs of 04, 05, 06 and 10");
    }
    if (!opts.variant.empty() && opts.variant != info.timeline_variant) {
      throw UsageError("--timeline records the variant " + info.timeline_variant +
                       ": leave out --variant or name that one (got '" + shown(opts.variant) + "')");
    }
    // Checked before any GPU work: a recording that cannot be written is refused at once.
    std::error_code error;
    const std::filesystem::path path(opts.timeline);
    const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : ".";
    const auto status = std::filesystem::status(path, error);
    if (!std::filesystem::is_directory(folder, error)) {
      throw UsageError("--timeline must name a file in an existing folder (no folder '" + shown(folder.string()) +
                       "')");
    }
    if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
      throw UsageError("--timeline must name a regular file ('" + shown(opts.timeline) +
                       "' is a folder or a device)");
    }
    if (access(folder.c_str(), W_OK) != 0 ||
        (std::filesystem::exists(status) && access(path.c_str(), W_OK) != 0)) {
      throw UsageError("--timeline must name a file this user may write ('" + shown(opts.timeline) + "')");
    }
  }
  if (!opts.size_given) {
    opts.size_bytes = opts.bench ? info.bench_bytes : info.verify_bytes;
    if (!opts.bench && !opts.timeline.empty() && info.timeline_bytes != 0) opts.size_bytes = info.timeline_bytes;
  }
  if (info.size_rule) {
    if (std::optional<std::string> broken = info.size_rule(opts.size_bytes)) throw UsageError(*broken);
  }
  return opts;
}

/// Flushes standard output and turns a write error (a full disk, a closed pipe) into a failure.
inline int finish_output(const ChapterInfo& info, int code) {
  std::cout.flush();
  if (!std::cout) {
    std::cerr << info.program << ": cannot write to standard output\n";
    return code == kExitPass ? kExitFail : code;
  }
  return code;
}

/// The whole life of a chapter program. `run(opts, report)` verifies (and times) the selected variants.
/// With --format=csv or json, standard output stays parseable whatever the outcome (pass, fail,
/// skip, bad input) and carries the status and its reason; messages go to standard error.
template <class Table, class Run>
int chapter_main(int argc, char** argv, const ChapterInfo& info, const Table& table, Run&& run) {
  const std::vector<VariantInfo> variants = variant_infos(table);
  const Format format = requested_format(std::vector<std::string>(argv + 1, argv + argc));
  Options opts;
  try {
    opts = resolve_options(argc, argv, info, variants);
  } catch (const UsageError& error) {
    std::cerr << info.program << ": " << error.what() << '\n';
    print_outcome(std::cout, format, info.program, "usage", error.what());
    return finish_output(info, kExitUsage);
  }
  if (opts.help) {
    print_help(std::cout, info, variants);
    return finish_output(info, kExitPass);
  }
  std::ostream& log = opts.format == Format::text ? std::cout : std::cerr;
  log << info.title << '\n' << info.explanation << '\n';
  if (info.host_model) info.host_model(log);

  const DeviceInfo device = query_device();
  if (std::optional<std::string> missing = unmet_requirement(info.requirement, device)) {
    std::ostream& skip_line = opts.format == Format::text ? std::cout : std::cerr;
    skip_line << "SKIPPED: " << info.program << ": " << *missing << '\n';
#if defined(COURSE_RESULTS_PAGE) && defined(COURSE_RESULTS_WHERE)
    // Nothing to run here, but an H100 ran it: its recorded results are on the chapter page.
    skip_line << "what an H100 printed and measured: " COURSE_RESULTS_PAGE ", " COURSE_RESULTS_WHERE "\n";
#endif
    print_outcome(std::cout, opts.format, info.program, "skipped", *missing);
    return finish_output(info, kExitSkip);
  }
  log << "device: " << describe(device) << '\n';
  run_device_setups();
  if (opts.bench && info.bench_reads_device_memory && working_set_too_small(opts.size_bytes, device.l2_bytes)) {
    log << "note: --size " << format_size(opts.size_bytes) << " is under twice the L2 ("
        << format_size(device.l2_bytes) << "): timings measure the cache, not device memory\n";
  }
  Report report(info.program, device);
  try {
    if (info.in_flight) log << in_flight_line(in_flight_need(device), kept_in_flight(*info.in_flight)) << '\n';
    run(opts, report);
    // Verify first, then record: a timeline is drawn only of a kernel whose results were right.
    if (!opts.timeline.empty()) {
      if (report.all_passed()) {
        info.timeline(opts, log);
      } else {
        log << "timeline: not recorded, since a variant failed its verification\n";
      }
    }
  } catch (const std::exception& error) {
    report.set_outcome("failed", error.what());
    report.print(std::cout, opts.format);
    log << "FAILED: " << info.program << ": " << error.what() << '\n';
    return finish_output(info, kExitFail);
  }
  const bool ok = report.all_passed();
  report.set_outcome(ok ? "passed" : "failed", ok ? "" : "a variant's output differs from the reference");
  report.print(std::cout, opts.format);
  for (const Row& row : report.rows()) {
    if (!row.passed) log << "mismatch in " << row.variant << ": " << row.check << '\n';
  }
  log << (ok ? "PASSED: " : "FAILED: ") << info.program << '\n';
  return finish_output(info, ok ? kExitPass : kExitFail);
}

}  // namespace course
