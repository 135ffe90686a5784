// Draws the chapter's concept figure from barrier_model.hpp: the pending count, phase and parity
// of one barrier over two batches of a block of four threads, each binding one copy (the minimal
// kernel on 8.0: init(4), the counting arrive-on, arrive_and_wait).
//   barrier_figures DIR   ->  DIR/barrier_phases.svg
//   build/03_barrier/barrier_figures 03_barrier/figures   (regenerates the committed figure)
// The host test HostFigures compares the committed file with barrier_phases_svg(), byte for byte.
#include <string>
#include <vector>

#include "course/figures.hpp"
#include "barrier_model.hpp"

// One step of the figure: what happened, and the model barrier's state after it.
struct FigureStep {
  std::string what;
  int pending;
  unsigned phase;
  bool wait0_returns;  // wait_parity(0): has the phase with parity 0 completed?
};

// Two batches of `threads` threads: bind a copy each, arrive each, then the copies land one by one.
inline std::vector<FigureStep> barrier_phase_steps(int threads) {
  BarrierModel bar;
  std::vector<FigureStep> steps;
  const auto record = [&](std::string what) {
    steps.push_back({std::move(what), bar.pending, bar.phase, bar.parity_done(0)});
  };
  bar.init(threads);
  record("init(" + std::to_string(threads) + ")");
  for (int batch = 0; batch < 2; ++batch) {
    bar.bind_copies(threads);
    record("bind");
    bar.arrive(threads);
    record("arrive");
    for (int copy = 1; copy <= threads; ++copy) {
      bar.copies_land(1);
      record("land " + std::to_string(copy));
    }
  }
  return steps;
}

inline std::string barrier_phases_svg() {
  const std::vector<FigureStep> steps = barrier_phase_steps(4);
  const int column = 48, left = 70, top = 48, unit = 14, max_pending = 8;
  const int width = left + column * static_cast<int>(steps.size()) + 12;
  const int base = top + unit * max_pending;  // the bars' baseline
  const int height = base + 110;
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + std::to_string(width) + " " +
                    std::to_string(height) + "\" width=\"100%\" font-family=\"sans-serif\" font-size=\"13\">\n";
  svg += "<rect x=\"0\" y=\"0\" width=\"" + std::to_string(width) + "\" height=\"" + std::to_string(height) +
         "\" fill=\"#ffffff\"/>\n";
  svg += "<text x=\"8\" y=\"22\" font-size=\"15\" fill=\"#000000\">One barrier, init(4): four threads, one bound "
         "copy each, two batches</text>\n";
  const auto text = [&](int x, int y, const std::string& s, const char* anchor = "middle") {
    svg += "<text x=\"" + std::to_string(x) + "\" y=\"" + std::to_string(y) + "\" text-anchor=\"" + anchor +
           "\" fill=\"#000000\">" + s + "</text>\n";
  };
  text(8, top + 12, "pending", "start");
  text(8, base + 24, "phase", "start");
  text(8, base + 44, "parity", "start");
  text(8, base + 64, "wait(0)", "start");
  text(8, base + 90, "step", "start");
  svg += "<line x1=\"" + std::to_string(left) + "\" y1=\"" + std::to_string(base) + "\" x2=\"" +
         std::to_string(width - 8) + "\" y2=\"" + std::to_string(base) + "\" stroke=\"#000000\"/>\n";
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const FigureStep& step = steps[i];
    const int x = left + column * static_cast<int>(i);
    const int centre = x + column / 2;
    const int bar_height = unit * step.pending;
    const char* fill = step.phase % 2 == 0 ? "#9ecae1" : "#fdae6b";  // the phase the bar belongs to
    svg += "<rect x=\"" + std::to_string(x + 6) + "\" y=\"" + std::to_string(base - bar_height) + "\" width=\"" +
           std::to_string(column - 12) + "\" height=\"" + std::to_string(bar_height) + "\" fill=\"" + fill +
           "\" stroke=\"#000000\"/>\n";
    text(centre, base - bar_height - 4, std::to_string(step.pending));
    text(centre, base + 24, std::to_string(step.phase));
    text(centre, base + 44, std::to_string(step.phase & 1u));
    text(centre, base + 64, step.wait0_returns ? "returns" : "waits");
    text(centre, base + 90, step.what);
  }
  svg += "</svg>\n";
  return svg;
}

// The program's figures: what course::figures_main() writes and HostFigures checks.
constexpr const char* kFiguresProgram = "barrier_figures";
inline std::vector<course::Figure> chapter_figures() {
  return {{"barrier_phases.svg", barrier_phases_svg}};
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) {
  return course::figures_main(kFiguresProgram, chapter_figures(), argc, argv);
}
#endif
