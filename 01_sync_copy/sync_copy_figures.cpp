// Writes the chapter's concept figure, computed by copy_paths_svg() from sync_copy_model.hpp:
//   sync_copy_figures DIR   ->  DIR/copy_paths.svg
//   build/01_sync_copy/sync_copy_figures 01_sync_copy/figures   (regenerates the committed figure)
// The figure sets the register path of this chapter (global -> register -> shared, then the block
// syncs) beside the LDGSTS path of chapter 02 (global -> shared, no register), with the model's
// instructions per batch, bytes in flight and Little's law. The host tests HostFigures compare
// the committed file with the same function, byte for byte, and run its command line.
#include <cstdio>
#include <string>
#include <vector>

#include "course/figures.hpp"
#include "sync_copy_model.hpp"

namespace figure {

constexpr int kBatch = 4096, kThreads = 256;  // the lesson's batch bytes and block threads
constexpr double kReadGbps = 1500, kLatencyNs = 600;     // the need the page works out

// printf into a std::string.
template <class... Args>
std::string format(const char* pattern, Args... args) {
  char text[256];
  std::snprintf(text, sizeof text, pattern, args...);
  return text;
}

void text(std::string& svg, int x, int y, const std::string& words, const char* extra = "") {
  svg += format("<text x=\"%d\" y=\"%d\"%s>", x, y, extra) + words + "</text>\n";
}

// A labelled box, its label centred.
void box(std::string& svg, int x, int y, int w, int h, const char* fill, const std::string& label,
         const char* stroke_extra = "") {
  svg += format("<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"6\" fill=\"%s\" "
                "stroke=\"#333333\"%s/>\n",
                x, y, w, h, fill, stroke_extra);
  text(svg, x + w / 2, y + h / 2 + 5, label, " text-anchor=\"middle\"");
}

// A downward arrow from (x, y0) to (x, y1), labelled on its right.
void arrow(std::string& svg, int x, int y0, int y1, const std::string& label) {
  svg += format("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333333\" "
                "stroke-width=\"2\" marker-end=\"url(#head)\"/>\n",
                x, y0, x, y1 - 2);
  text(svg, x + 10, (y0 + y1) / 2 + 5, label, " font-weight=\"bold\"");
}

// The lines under a path: what one batch costs each way (the model's numbers).
std::vector<std::string> register_path_lines(const MachineModel& machine) {
  const std::vector<CopyPlan> plans = copy_plans();
  std::vector<std::string> lines;
  for (const char* name : {"sync_copy", "sync_copy_uint4"}) {
    const CopyPlan& plan = *find_plan(plans, name);
    const BatchCost cost = batch_cost(plan, kBatch, kThreads);
    const double per_sm = double(cost.bytes_in_flight) * kThreads * machine.blocks_per_sm;
    lines.push_back(format("%s (%d-byte loads):", name, plan.load_bytes));
    lines.push_back(format("  %d LDG + %d STS, %d syncs", cost.global_loads, cost.shared_stores,
                           cost.barriers));
    lines.push_back(format("  %d B in flight a thread, %.0f KiB an SM", cost.bytes_in_flight,
                           per_sm / 1024));
    lines.push_back(format("  reads %.0f GB/s at most (a bound)",
                           bandwidth_gbps(per_sm * machine.num_sms, machine.latency_ns)));
  }
  return lines;
}

std::vector<std::string> ldgsts_path_lines() {
  // The same 16-byte pieces as sync_copy_uint4, each copied by one instruction.
  const BatchCost wide =
      batch_cost(*find_plan(copy_plans(), "sync_copy_uint4"), kBatch, kThreads);
  return {format("%d LDGSTS of 16 B, 0 STS", wide.global_loads),
          "no register holds the data:",
          "a thread issues its copies and",
          "moves on; it waits for them",
          "before the compute (chapter 02)"};
}

}  // namespace figure

// The figure: two paths side by side, the model's numbers under each, Little's law underneath.
inline std::string copy_paths_svg() {
  using namespace figure;
  const MachineModel machine;
  const std::vector<std::string> left = register_path_lines(machine), right = ldgsts_path_lines();
  const int lines = static_cast<int>(left.size() > right.size() ? left.size() : right.size());
  const int list_top = 362, line_h = 20, width = 720;
  const int height = list_top + line_h * lines + 80;
  std::string svg = format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100%%\" viewBox=\"0 0 %d %d\" "
      "font-family=\"sans-serif\" font-size=\"14\" fill=\"#111111\">\n",
      width, height);
  svg += "<defs><marker id=\"head\" viewBox=\"0 0 10 10\" markerWidth=\"6\" markerHeight=\"6\" "
         "refX=\"9\" refY=\"5\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#333333\"/></marker></defs>\n";
  svg += format("<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", width,
                height);
  text(svg, 12, 28, format("One %d-byte batch into shared memory, %d threads", kBatch,
                           kThreads),
       " font-size=\"17\" font-weight=\"bold\"");
  // Left: the register path.
  text(svg, 20, 62, "Register path (this chapter)", " font-weight=\"bold\" fill=\"#8a2b0a\"");
  box(svg, 40, 80, 200, 44, "#dbe8f5", "global memory");
  arrow(svg, 140, 124, 170, "LDG: wait for it");
  box(svg, 40, 170, 200, 44, "#f8d9c8", "register");
  arrow(svg, 140, 214, 260, "STS");
  box(svg, 40, 260, 200, 44, "#dcefd0", "shared memory");
  text(svg, 20, 328, "then block.sync() before the compute", " font-style=\"italic\"");
  // Right: the LDGSTS path.
  text(svg, 380, 62, "LDGSTS path (chapter 02)", " font-weight=\"bold\" fill=\"#1f5f8b\"");
  box(svg, 400, 80, 200, 44, "#dbe8f5", "global memory");
  box(svg, 480, 170, 200, 44, "#ffffff", "no register, no STS",
      " stroke-dasharray=\"5 4\" fill-opacity=\"0\"");
  svg += format("<line x1=\"460\" y1=\"124\" x2=\"460\" y2=\"258\" stroke=\"#333333\" "
                "stroke-width=\"2\" marker-end=\"url(#head)\"/>\n");
  text(svg, 470, 152, "LDGSTS: one instruction", " font-weight=\"bold\"");
  box(svg, 400, 260, 200, 44, "#dcefd0", "shared memory");
  text(svg, 380, 328, "then a wait before the compute", " font-style=\"italic\"");
  svg += format("<line x1=\"360\" y1=\"44\" x2=\"360\" y2=\"%d\" stroke=\"#999999\"/>\n",
                list_top + line_h * lines - 8);
  for (std::size_t i = 0; i < left.size(); ++i) {
    text(svg, 20, list_top + line_h * static_cast<int>(i), left[i], " xml:space=\"preserve\"");
  }
  for (std::size_t i = 0; i < right.size(); ++i) {
    text(svg, 380, list_top + line_h * static_cast<int>(i), right[i]);
  }
  // Underneath: what the memory needs, by Little's law.
  const int need_y = list_top + line_h * lines + 22;
  text(svg, 12, need_y,
       format("Little's law: reading %.1f TB/s at %.0f ns needs %.0f KB in flight,",
              kReadGbps / 1000, kLatencyNs, bytes_in_flight(kReadGbps, kLatencyNs) / 1000),
       " font-weight=\"bold\"");
  text(svg, 12, need_y + 22,
       format("%.1f KiB on each of %d SMs (%d blocks of %d threads an SM, latency assumed)",
              bytes_in_flight_per_sm(kReadGbps, kLatencyNs, machine.num_sms) / 1024,
              machine.num_sms, machine.blocks_per_sm, kThreads));
  svg += "</svg>\n";
  return svg;
}

// The program's figures: what course::figures_main() writes and HostFigures checks.
constexpr const char* kFiguresProgram = "sync_copy_figures";
inline std::vector<course::Figure> chapter_figures() {
  return {{"copy_paths.svg", copy_paths_svg}};
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) {
  return course::figures_main(kFiguresProgram, chapter_figures(), argc, argv);
}
#endif
