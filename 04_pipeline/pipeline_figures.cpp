// The chapter's concept figure, drawn from the model's schedule (pipeline_model.hpp):
//   pipeline_figures DIR   ->  DIR/pipeline_in_flight.svg
//   build/04_pipeline/pipeline_figures 04_pipeline/figures   (regenerates the committed figure)
// One block's four-stage pipeline over ten batches: which batch sits in which stage from the
// producer's acquire/commit to the consumer's wait and release, the parity each wait checks, and
// how many batches are in flight at each wait. HostFigures in pipeline_test.cu compares the
// committed file with in_flight_svg() byte for byte and runs its command line.
#include <cstdio>
#include <string>
#include <vector>

#include "course/figures.hpp"
#include "pipeline_model.hpp"

constexpr int kFigureStages = 4;            // the lesson's stage count
constexpr std::size_t kFigureBatches = 10;  // prime, six refills, a drain of four

// The figure as an SVG document. Columns are the block's steps: the prime, then one column per
// batch k it waits for. A batch is a bar in its stage's row: light from the producer's commit
// (a mark) to the consumer's wait, dark from the wait to the release. Colours alternate with
// the parity of the round, the phase the wait checks on the stage's full barrier.
template <int kStages>
std::string in_flight_svg(std::size_t num_batches) {
  const std::vector<PipelineStep> steps = pipeline_schedule<kStages>(num_batches);
  static const char* const kLight[2] = {"#c6dbef", "#fdd0a2"};
  static const char* const kDark[2] = {"#2171b5", "#c44100"};
  const int columns = static_cast<int>(num_batches) + 1;
  const int left = 84, top = 104, row = 40, width = 720;
  const int col = (width - left - 8) / columns;
  const int rows_bottom = top + kStages * row;
  const int height = rows_bottom + 170;
  std::string svg;
  char text[400];
  auto put = [&](const char* format, auto... args) {
    std::snprintf(text, sizeof text, format, args...);
    svg += text;
  };
  auto x_of = [&](int column, double at) { return left + column * col + static_cast<int>(at * col); };
  put("<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" width=\"100%%\" "
      "font-family=\"DejaVu Sans, Arial, sans-serif\">\n", width, height);
  put("<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", width, height);
  put("<text x=\"12\" y=\"22\" font-size=\"16\" font-weight=\"bold\" fill=\"#000000\">One block, %d stages, "
      "%zu batches: which batch is in which stage</text>\n", kStages, num_batches);
  put("<text x=\"12\" y=\"41\" font-size=\"12\" fill=\"#000000\">a bar per batch: light while its copy is "
      "in flight, dark from consumer_wait to consumer_release</text>\n");
  // The three phases over their columns: the prime, the steps that refill, the drain.
  int refilling = 0;
  for (const PipelineStep& s : steps) refilling += s.refills ? 1 : 0;
  const int drain = static_cast<int>(num_batches) - refilling;
  const struct { int first, count; const char* label; } spans[] = {
      {0, 1, "prime"}, {1, refilling, "steady state: refill"}, {1 + refilling, drain, "drain"}};
  for (const auto& span : spans) {
    if (span.count == 0) continue;
    const int x0 = x_of(span.first, 0.04), x1 = x_of(span.first + span.count, -0.04);
    put("<line x1=\"%d\" y1=\"62\" x2=\"%d\" y2=\"62\" stroke=\"#555555\" stroke-width=\"2\"/>\n", x0, x1);
    put("<text x=\"%d\" y=\"56\" font-size=\"12\" text-anchor=\"middle\" fill=\"#000000\">%s</text>\n",
        (x0 + x1) / 2, span.label);
  }
  put("<text x=\"%d\" y=\"88\" font-size=\"12\" text-anchor=\"end\" fill=\"#000000\">wait for</text>\n",
      left - 6);
  for (int c = 0; c < columns; ++c) {
    if (c > 0) {
      put("<text x=\"%d\" y=\"88\" font-size=\"12\" text-anchor=\"middle\" fill=\"#000000\">%d</text>\n",
          x_of(c, 0.5), c - 1);
    }
    put("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#bbbbbb\"/>\n", x_of(c, 0), top - 8, x_of(c, 0),
        rows_bottom + 46);
  }
  for (int s = 0; s < kStages; ++s) {
    put("<text x=\"%d\" y=\"%d\" font-size=\"13\" text-anchor=\"end\" fill=\"#000000\">stage %d</text>\n",
        left - 6, top + s * row + row / 2 + 5, s);
  }
  // Batch b: committed in the prime (b < kStages) or by the step that refills b's stage.
  std::vector<int> commit_column(num_batches, 0);
  for (const PipelineStep& s : steps) {
    if (s.refills) commit_column[s.refill_batch] = static_cast<int>(s.batch) + 1;
  }
  for (const PipelineStep& s : steps) {
    const int y = top + s.stage * row + 8, h = row - 16;
    const int column = static_cast<int>(s.batch) + 1;
    const int x_commit = x_of(commit_column[s.batch], 0.72), x_wait = x_of(column, 0.08);
    const int x_release = x_of(column, 0.62);
    put("<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n", x_commit, y, x_wait - x_commit,
        h, kLight[s.phase]);
    put("<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n", x_wait, y, x_release - x_wait, h,
        kDark[s.phase]);
    put("<text x=\"%d\" y=\"%d\" font-size=\"13\" text-anchor=\"middle\" fill=\"#ffffff\">%zu</text>\n",
        (x_wait + x_release) / 2, y + h / 2 + 5, s.batch);
    put("<path d=\"M %d %d l -6 -8 h 12 z\" fill=\"#222222\"/>\n", x_commit, y);
  }
  // Model state at each wait: the batches in flight (this one included) and the parity checked.
  const int y_flight = rows_bottom + 22, y_parity = rows_bottom + 42;
  put("<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"end\" fill=\"#000000\">in flight</text>\n",
      left - 6, y_flight);
  put("<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"end\" fill=\"#000000\">parity</text>\n",
      left - 6, y_parity);
  for (const PipelineStep& s : steps) {
    const int x = x_of(static_cast<int>(s.batch) + 1, 0.5);
    put("<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\" fill=\"#000000\">%zu</text>\n", x,
        y_flight, s.in_flight);
    put("<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\" fill=\"#000000\">%u</text>\n", x,
        y_parity, s.phase);
  }
  // Legend.
  const int y_legend = rows_bottom + 74;
  put("<path d=\"M 18 %d l -6 -8 h 12 z\" fill=\"#222222\"/>\n", y_legend + 2);
  put("<text x=\"30\" y=\"%d\" font-size=\"12\" fill=\"#000000\">producer_acquire (the stage is free), "
      "memcpy_async, producer_commit</text>\n", y_legend);
  for (int p = 0; p < 2; ++p) {
    const int y = y_legend + 14 + p * 22;
    put("<rect x=\"12\" y=\"%d\" width=\"14\" height=\"14\" fill=\"%s\"/>\n", y, kLight[p]);
    put("<rect x=\"26\" y=\"%d\" width=\"14\" height=\"14\" fill=\"%s\"/>\n", y, kDark[p]);
    put("<text x=\"48\" y=\"%d\" font-size=\"12\" fill=\"#000000\">round %s of the ring: consumer_wait "
        "checks parity %d of the stage's full barrier</text>\n",
        y + 12, p == 0 ? "0, 2, ..." : "1, 3, ...", p);
  }
  put("<text x=\"12\" y=\"%d\" font-size=\"12\" fill=\"#555555\">Drawn from pipeline_schedule&lt;%d&gt;(%zu) "
      "(pipeline_model.hpp) by pipeline_figures.</text>\n", height - 10, kStages, num_batches);
  svg += "</svg>\n";
  return svg;
}

inline std::string in_flight_svg() { return in_flight_svg<kFigureStages>(kFigureBatches); }

// The program's figures: what course::figures_main() writes and HostFigures checks.
constexpr const char* kFiguresProgram = "pipeline_figures";
inline std::vector<course::Figure> chapter_figures() {
  return {{"pipeline_in_flight.svg", [] { return in_flight_svg(); }}};
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) {
  return course::figures_main(kFiguresProgram, chapter_figures(), argc, argv);
}
#endif
