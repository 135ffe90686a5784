// Writes the chapter's concept figure, computed by carveout_rounding_svg() from carveout_model.hpp:
//   carveout_figures DIR   ->  DIR/carveout_rounding.svg
//   build/11_carveout/carveout_figures 11_carveout/figures   (regenerates the committed figure)
// For compute capability 9.0 (the H100) and 12.0 (the guide's example) it draws the unified data
// cache, the shared-memory capacities a carveout can select, and for a few percentages what they
// ask for and the capacity they get (the next larger one). The host tests HostFigures compare
// the committed file with the same function, byte for byte, and run its command line.
#include <cstdio>
#include <string>
#include <vector>

#include "course/figures.hpp"
#include "carveout_model.hpp"

namespace figure {

// printf into a std::string.
template <class... Args>
std::string format(const char* pattern, Args... args) {
  char text[256];
  std::snprintf(text, sizeof text, pattern, args...);
  return text;
}

struct Panel {
  int major, minor;
  const char* title;
  std::vector<int> percents;  // the requests drawn under the scale
};

const std::vector<Panel>& panels() {
  static const std::vector<Panel> list = {
      {9, 0, "9.0 (the H100)", {25, 50, 58, 86}},
      {12, 0, "12.0 (guide example)", {50}},
  };
  return list;
}

constexpr int kLeft = 30, kRight = 690, kWidth = 720;

// One panel from `top`: its height is returned.
int draw_panel(std::string& svg, const Panel& panel, int top) {
  const SharedCapacities caps = *shared_capacities(panel.major, panel.minor);
  const double px_per_kib = double(kRight - kLeft) / caps.unified_kib;
  const auto x_of = [&](double kib) { return kLeft + kib * px_per_kib; };
  svg += format("<text x=\"%d\" y=\"%d\" font-weight=\"bold\">Compute capability %s: "
                "%d KiB of L1 + shared memory per SM</text>\n",
                kLeft, top + 16, panel.title, caps.unified_kib);
  const int bar_y = top + 28, bar_h = 26;
  // The largest shared-memory capacity, and the L1 that always remains beside it.
  svg += format("<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#dcefd0\" "
                "stroke=\"#333333\"/>\n",
                kLeft, bar_y, x_of(caps.max_kib()) - kLeft, bar_h);
  svg += format("<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#dbe8f5\" "
                "stroke=\"#333333\"/>\n",
                x_of(caps.max_kib()), bar_y, kRight - x_of(caps.max_kib()), bar_h);
  svg += format("<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">L1 always</text>\n",
                (x_of(caps.max_kib()) + kRight) / 2, bar_y + 18);
  // The capacities a carveout can select: a tick each, labels alternating above and below.
  for (std::size_t i = 0; i < caps.kib.size(); ++i) {
    const double x = x_of(caps.kib[i]);
    svg += format("<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#1d6b1d\" "
                  "stroke-width=\"2\"/>\n",
                  x, bar_y, x, bar_y + bar_h);
    const int label_y = (i % 2 == 0) ? bar_y + bar_h + 15 : bar_y + bar_h + 30;
    svg += format("<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" font-size=\"12\">%d</text>\n",
                  x, label_y, caps.kib[i]);
  }
  int y = bar_y + bar_h + 56;
  for (int percent : panel.percents) {
    const double asked = caps.max_kib() * percent / 100.0;
    const int got = preferred_capacity_kib(caps, percent);
    const double x0 = x_of(asked), x1 = x_of(got);
    svg += format("<circle cx=\"%.1f\" cy=\"%d\" r=\"4\" fill=\"#8a2b0a\"/>\n", x0, y);
    svg += format("<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#8a2b0a\" "
                  "stroke-width=\"2\" marker-end=\"url(#head)\"/>\n",
                  x0, y, x1 - 1, y);
    svg += format("<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#999999\" "
                  "stroke-dasharray=\"3 3\"/>\n",
                  x1, bar_y + bar_h, x1, y);
    const std::string label =
        format("%d %%: asks %s, gets %d KiB", percent, format_kib(asked).c_str(), got);
    const double label_w = 8.0 * label.size();
    if (x1 + 10 + label_w <= kWidth - 8) {
      svg += format("<text x=\"%.1f\" y=\"%d\">%s</text>\n", x1 + 10, y + 5, label.c_str());
    } else {
      svg += format("<text x=\"%.1f\" y=\"%d\" text-anchor=\"end\">%s</text>\n", x0 - 10, y + 5,
                    label.c_str());
    }
    y += 26;
  }
  return y - top;
}

}  // namespace figure

// The figure: a panel per architecture, stacked.
inline std::string carveout_rounding_svg() {
  using namespace figure;
  std::string body;
  int top = 40;
  for (const Panel& panel : panels()) top += draw_panel(body, panel, top) + 14;
  const int height = top + 34;
  std::string svg = format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100%%\" viewBox=\"0 0 %d %d\" "
      "font-family=\"sans-serif\" font-size=\"14\" fill=\"#111111\">\n",
      kWidth, height);
  svg += "<defs><marker id=\"head\" viewBox=\"0 0 10 10\" markerWidth=\"6\" markerHeight=\"6\" "
         "refX=\"9\" refY=\"5\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" "
         "fill=\"#8a2b0a\"/></marker></defs>\n";
  svg += format("<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", kWidth,
                height);
  svg += format("<text x=\"%d\" y=\"26\" font-size=\"17\" font-weight=\"bold\">A carveout "
                "percentage rounds up to a capacity the SM supports</text>\n",
                kLeft - 18);
  svg += body;
  svg += format("<text x=\"%d\" y=\"%d\">Ticks: the shared-memory capacities (KiB) a carveout "
                "can select (guide, Table 32).</text>\n",
                kLeft - 18, height - 14);
  svg += "</svg>\n";
  return svg;
}

// The program's figures: what course::figures_main() writes and HostFigures checks.
constexpr const char* kFiguresProgram = "carveout_figures";
inline std::vector<course::Figure> chapter_figures() {
  return {{"carveout_rounding.svg", carveout_rounding_svg}};
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) {
  return course::figures_main(kFiguresProgram, chapter_figures(), argc, argv);
}
#endif
