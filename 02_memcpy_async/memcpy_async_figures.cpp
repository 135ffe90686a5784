// Draws the chapter's concept figure from the model in memcpy_async_model.hpp:
//   memcpy_async_figures DIR   ->  DIR/ldgsts_path.svg
//   build/02_memcpy_async/memcpy_async_figures 02_memcpy_async/figures   (regenerates it)
// The figure: the paths one batch of the lesson (4 KiB, 256 threads) takes from global to shared
// memory (through a register, LDGSTS, the bulk copy), with the instruction counts of the model,
// and one thread's commit groups over the primitives' four calls, simulated by CommitGroups.
// HostFigures in memcpy_async_test.cu compares the committed file with ldgsts_path_svg().
#include <cstdio>
#include <string>
#include <vector>

#include "course/figures.hpp"
#include "memcpy_async_model.hpp"

namespace figures {

constexpr int kWidth = 720, kHeight = 570;
constexpr int kThreads = 256;             // the lesson's block
constexpr std::size_t kBatchBytes = 4096;  // the lesson's batch

inline std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

class Svg {
 public:
  void text(int x, int y, int size, const std::string& s, const char* anchor = "start", bool bold = false,
            const char* family = nullptr) {
    put("<text x=\"%d\" y=\"%d\" font-size=\"%d\" text-anchor=\"%s\"%s%s%s%s fill=\"#111111\">", x, y, size, anchor,
        bold ? " font-weight=\"bold\"" : "", family ? " font-family=\"" : "", family ? family : "", family ? "\"" : "");
    body_ += escape(s) + "</text>\n";
  }
  void box(int x, int y, int w, int h, const char* fill, bool dashed = false) {
    put("<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"6\" fill=\"%s\" stroke=\"%s\" stroke-width=\"1.5\"%s/>\n",
        x, y, w, h, fill, dashed ? "#999999" : "#334466", dashed ? " stroke-dasharray=\"5 4\"" : "");
  }
  void arrow(const std::string& path) {
    body_ += "<path d=\"" + path + "\" fill=\"none\" stroke=\"#1f5fa8\" stroke-width=\"2.5\" marker-end=\"url(#head)\"/>\n";
  }
  std::string finish() const {
    char head[512];
    std::snprintf(head, sizeof head,
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100%%\" viewBox=\"0 0 %d %d\" "
                  "font-family=\"DejaVu Sans, Arial, sans-serif\">\n"
                  "<defs><marker id=\"head\" markerWidth=\"10\" markerHeight=\"8\" refX=\"9\" refY=\"4\" "
                  "orient=\"auto\"><path d=\"M0,0 L10,4 L0,8 z\" fill=\"#1f5fa8\"/></marker></defs>\n"
                  "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n",
                  kWidth, kHeight, kWidth, kHeight);
    return head + body_ + "</svg>\n";
  }

 private:
  template <class... Args>
  void put(const char* format, Args... args) {
    char line[512];
    std::snprintf(line, sizeof line, format, args...);
    body_ += line;
  }
  std::string body_;
};

// "LDGSTS \u00d7256, 16 B each" for a path and a call, from the model.
inline std::string count_label(const char* what, int sm, const CopyCall& call) {
  const CopyPath path = path_of(sm, call);
  return std::string(what) + " \u00d7" + std::to_string(instructions_per_batch(sm, call)) + ", " +
         std::to_string(path.width_bytes) + " B each";
}

// One row: global | registers | shared, and the arrows between them.
inline void path_row(Svg& svg, int top, const std::string& title, bool through_registers,
                     const std::string& label, const std::string& note) {
  constexpr int kBoxW = 150, kBoxH = 40, kGlobalX = 20, kRegX = 285, kSharedX = 550;
  const int y = top + 22, mid = y + kBoxH / 2;
  svg.text(20, top + 12, 14, title, "start", true);
  svg.box(kGlobalX, y, kBoxW, kBoxH, "#eef3fb");
  svg.text(kGlobalX + kBoxW / 2, mid + 5, 14, "global", "middle");
  svg.box(kRegX, y, kBoxW, kBoxH, through_registers ? "#fdf1dc" : "#ffffff", !through_registers);
  svg.text(kRegX + kBoxW / 2, mid + 5, 14, through_registers ? "registers" : "registers: unused", "middle");
  svg.box(kSharedX, y, kBoxW, kBoxH, "#e6f4ea");
  svg.text(kSharedX + kBoxW / 2, mid + 5, 14, "shared", "middle");
  if (through_registers) {
    svg.arrow("M" + std::to_string(kGlobalX + kBoxW) + "," + std::to_string(mid) + " L" + std::to_string(kRegX - 4) +
              "," + std::to_string(mid));
    svg.arrow("M" + std::to_string(kRegX + kBoxW) + "," + std::to_string(mid) + " L" + std::to_string(kSharedX - 4) +
              "," + std::to_string(mid));
  } else {  // over the register file, straight into shared memory
    svg.arrow("M" + std::to_string(kGlobalX + kBoxW) + "," + std::to_string(mid) + " C" +
              std::to_string(kRegX) + "," + std::to_string(y - 14) + " " + std::to_string(kRegX + kBoxW) + "," +
              std::to_string(y - 14) + " " + std::to_string(kSharedX - 4) + "," + std::to_string(mid));
  }
  svg.text(360, y + kBoxH + 20, 13, label, "middle");
  svg.text(360, y + kBoxH + 38, 12, note, "middle");
}

// The concept figure of the chapter.
inline std::string ldgsts_path_svg() {
  Svg svg;
  svg.text(20, 26, 17, "One 4 KiB batch, global to shared: three paths", "start", true);
  svg.text(20, 46, 12, "the lesson's block of 256 threads; instruction counts per batch from memcpy_async_model.hpp");

  // Chapter 01's copy: each thread loads four uint32 into a register and stores them.
  const CopyCall plain{Api::plain, 4, 4, static_cast<int>(kBatchBytes / 4)};
  path_row(svg, 62, "smem_batch[i] = gmem_batch[i] (chapter 01), any GPU", true,
           count_label("LDG", 80, plain) + ", then STS \u00d7" + std::to_string(instructions_per_batch(80, plain)),
           "each store waits for its load to reach the register");

  // cooperative_groups::memcpy_async with 16 bytes proven: LDGSTS on 8.0 and 9.0.
  const CopyCall cg_call{Api::cg, 16, kBatchBytes};
  const CopyPath cg_path = path_of(80, cg_call);
  path_row(svg, 182, "memcpy_async, 16 bytes proven: LDGSTS (PTX cp.async), 8.0+", false,
           count_label("LDGSTS", 80, cg_call) + (cg_path.bypasses_l1() ? ", L1 bypassed (.cg)" : ", through L1"),
           "one instruction per 16 B per thread; the thread goes on, and waits later");

  // cuda::memcpy_async on a block barrier in shared memory: one bulk copy on 9.0.
  const CopyCall bulk_call{Api::cuda, 16, kBatchBytes, 1, SyncObject::smem_block_barrier};
  path_row(svg, 302, "the same cuda::memcpy_async on a cuda::barrier, on 9.0", false,
           "bulk copy \u00d7" + std::to_string(instructions_per_batch(90, bulk_call)) + ", " +
               std::to_string(path_of(90, bulk_call).width_bytes) + " B (cp.async.bulk)",
           "issued once for the block; completes on the barrier by counting bytes");

  // One thread of pipeline_primitives: its commit groups, simulated.
  const int top = 422;
  svg.text(20, top, 14, "One thread's copies in flight (pipeline_primitives), simulated", "start", true);
  struct Step {
    const char* call;
    const char* effect;
  };
  const Step steps[] = {{"__pipeline_memcpy_async(16 B)", "joins the open group"},
                        {"__pipeline_commit()", "closes the group"},
                        {"__pipeline_wait_prior(0)", "own groups landed"},
                        {"__syncthreads()", "others' copies too"}};
  CommitGroups groups;
  for (int i = 0; i < 4; ++i) {
    if (i == 0) groups.copy(static_cast<int>(kBatchBytes / kThreads));
    if (i == 1) groups.commit();
    if (i == 2) groups.wait_prior(0);
    const int y = top + 30 + 30 * i;
    svg.box(20, y - 17, 680, 26, i % 2 ? "#f7f7f7" : "#ffffff");
    svg.text(28, y + 1, 13, steps[i].call, "start", false, "DejaVu Sans Mono, monospace");
    svg.text(290, y + 1, 13, steps[i].effect, "start");
    const std::string state = "open: " + std::to_string(groups.open_copies()) +
                              ", committed: " + std::to_string(groups.groups_in_flight()) + " group" +
                              (groups.groups_in_flight() == 1 ? "" : "s") + ", " +
                              std::to_string(groups.bytes_in_flight()) + " B";
    svg.text(692, y + 1, 13, state, "end");
  }
  return svg.finish();
}

}  // namespace figures

// The program's figures: what course::figures_main() writes and HostFigures checks.
constexpr const char* kFiguresProgram = "memcpy_async_figures";
inline std::vector<course::Figure> chapter_figures() {
  return {{"ldgsts_path.svg", figures::ldgsts_path_svg}};
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) {
  return course::figures_main(kFiguresProgram, chapter_figures(), argc, argv);
}
#endif
