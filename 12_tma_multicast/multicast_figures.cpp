// Writes the chapter's concept figure, computed by multicast_masks_svg() from tma_multicast_model.hpp:
//   multicast_figures DIR   ->  DIR/multicast_masks.svg
//   build/12_tma_multicast/multicast_figures 12_tma_multicast/figures   (regenerates the committed one)
// For the lesson's 2 x 2 cluster it draws, per block: its rank, the slice of the A tile and of the
// B tile it loads, the ctaMask each slice goes to, and what its two barriers expect per stage.
// The host tests HostFigures compare the committed file with the same function, byte for byte.
#include <cstdio>
#include <string>
#include <vector>

#include "course/figures.hpp"
#include "tma_multicast_model.hpp"

namespace figure {

template <class... Args>
std::string format(const char* pattern, Args... args) {  // printf into a std::string
  char text[256];
  std::snprintf(text, sizeof text, pattern, args...);
  return text;
}

std::string bits(std::uint16_t mask, int width) {  // rank width-1 first, as the mask is written
  std::string s;
  for (int r = width - 1; r >= 0; --r) s += (mask >> r) & 1 ? '1' : '0';
  return s;
}

}  // namespace figure

inline std::string multicast_masks_svg() {
  using figure::format;
  using figure::bits;
  constexpr ClusterShape kShape{2, 2, true};
  const int blocks = kShape.x * kShape.y;
  constexpr int kWidth = 720, kBoxW = 340, kBoxH = 170, kTop = 64, kGap = 16;
  const int height = kTop + 2 * kBoxH + kGap + 56;
  std::string svg = format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" width=\"100%%\" "
      "font-family=\"sans-serif\" font-size=\"14\">\n",
      kWidth, height);
  svg += format("<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", kWidth, height);
  svg += "<text x=\"16\" y=\"26\" font-size=\"17\" font-weight=\"bold\">A 2 x 2 cluster: "
         "slices, masks and barrier counts</text>\n";
  svg += format("<text x=\"16\" y=\"48\">Ranks x fastest; mask bit r = rank r (rank %d "
                "leftmost). Per block, per stage:</text>\n",
                blocks - 1);
  for (int y = 0; y < kShape.y; ++y) {
    for (int x = 0; x < kShape.x; ++x) {
      const int left = 12 + x * (kBoxW + kGap), top = kTop + y * (kBoxH + kGap);
      const int rank = cluster_rank(kShape, x, y);
      svg += format("<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"8\" fill=\"%s\" "
                    "stroke=\"#333333\"/>\n",
                    left, top, kBoxW, kBoxH, rank % 3 == 0 ? "#e3f2fd" : "#fff3e0");
      const int a_first = a_slice_first_row(kShape, x), b_first = b_slice_first_row(kShape, y);
      const std::vector<std::string> lines = {
          format("block (%d,%d), rank %d", x, y, rank),
          format("A rows %d-%d (%u B) to mask %s", a_first, a_first + a_slice_rows(kShape) - 1,
                 a_slice_bytes(kShape), bits(a_multicast_mask(kShape, x, y), blocks).c_str()),
          format("B k-rows %d-%d (%u B) to mask %s", b_first, b_first + b_slice_rows(kShape) - 1,
                 b_slice_bytes(kShape), bits(b_multicast_mask(kShape, x, y), blocks).c_str()),
          format("full: 1 arrival + %u bytes", full_tx_bytes(kShape)),
          format("(its whole A and B tiles)"),
          format("empty: %d arrivals, (2 + 2 - 1) x %d", empty_arrivals(kShape), kConsumerWarps),
      };
      for (std::size_t i = 0; i < lines.size(); ++i) {
        svg += format("<text x=\"%d\" y=\"%d\"%s>%s</text>\n", left + 12,
                      top + 26 + static_cast<int>(i) * 25, i == 0 ? " font-weight=\"bold\"" : "",
                      lines[i].c_str());
      }
    }
  }
  svg += format("<text x=\"16\" y=\"%d\">Without multicast: whole tiles (%u bytes) into "
                "itself, mask = its own bit.</text>\n",
                height - 20, full_tx_bytes(kShape));
  svg += "</svg>\n";
  return svg;
}

// The program's figures: what course::figures_main() writes and HostFigures checks.
constexpr const char* kFiguresProgram = "multicast_figures";
inline std::vector<course::Figure> chapter_figures() {
  return {{"multicast_masks.svg", multicast_masks_svg}};
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) {
  return course::figures_main(kFiguresProgram, chapter_figures(), argc, argv);
}
#endif
