// Writes the chapter's concept figure, the st.async ring of a cluster: which block writes which
// neighbour's buffer, the filled and ready barriers of each stage, the receiver's expect-tx, and
// the parity every wait asks for. ring_svg() draws it from the model (ring_traffic, phase_counts,
// ring_waits in stas_cluster_model.hpp):
//   stas_cluster_figures DIR   ->  DIR/ring_10_stas_cluster.svg
//   build/10_stas_cluster/stas_cluster_figures 10_stas_cluster/figures
// The host test HostFigures compares the committed file with the same function, byte for byte.
#include <cstdio>
#include <string>
#include <vector>

#include "course/figures.hpp"
#include "stas_cluster_model.hpp"

constexpr int kFigureStages = 2;      // the lesson's stas_ring
constexpr int kFigureIterations = 6;  // three uses of each buffer
constexpr unsigned kFigureSender = 2;  // the pair drawn in detail: rank 2 writes into rank 3

template <int kStages>
std::string ring_svg(int num_iterations, unsigned sender) {
  static const char* const kFills[4] = {"#dbe9f6", "#fde2cf", "#dcefd9", "#efe3f4"};
  static const char* const kEdges[4] = {"#4477aa", "#cc6633", "#228833", "#aa3377"};
  const std::vector<BlockTraffic> ring = ring_traffic(kClusterBlocks, num_iterations);
  const unsigned receiver = ring[sender].sends_to;
  const PhaseCount filled = phase_counts(Release::per_block)[0];
  const PhaseCount ready = phase_counts(Release::per_block)[1];
  const std::vector<RingWait> waits = ring_waits<kStages>(num_iterations);
  constexpr int kWidth = 720, kBlockW = 70, kBlockGap = 18, kRingY = 62, kBlockH = 40;
  constexpr int kPairY = 190, kStageH = 104, kBoxW = 230, kLeftX = 14, kRightX = 476;
  constexpr int kInnerW = 198, kRowH = 22;
  const int pair_h = 40 + kStages * kStageH;
  const int table_y = kPairY + pair_h + 44;
  const int height = table_y + 28 + num_iterations * kRowH + 100;
  std::string svg;
  char text[640];
  auto put = [&](const char* format, auto... args) {
    std::snprintf(text, sizeof text, format, args...);
    svg += text;
  };
  auto arrow = [&](int x1, int y1, int x2, int y2, bool dashed) {
    put("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333333\" stroke-width=\"1.5\"%s "
        "marker-end=\"url(#arrow)\"/>\n",
        x1, y1, x2, y2, dashed ? " stroke-dasharray=\"6 4\"" : "");
  };
  auto box = [&](int x, int y, int w, int h, const char* fill, const char* edge) {
    put("<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"5\" fill=\"%s\" stroke=\"%s\"/>\n",
        x, y, w, h, fill, edge);
  };
  put("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100%%\" viewBox=\"0 0 %d %d\" "
      "font-family=\"DejaVu Sans, Arial, sans-serif\">\n",
      kWidth, height);
  svg += "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" "
         "markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\" "
         "fill=\"#333333\"/></marker></defs>\n";
  put("<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", kWidth, height);

  // The ring: every block writes into its right neighbour; the last closes it into rank 0.
  put("<text x=\"%d\" y=\"24\" font-size=\"17\" font-weight=\"bold\">The st.async ring: a cluster "
      "of %d blocks, %d stages per block</text>\n",
      kLeftX, kClusterBlocks, kStages);
  put("<text x=\"%d\" y=\"44\" font-size=\"12\">each block writes its %zu-byte message into its "
      "right neighbour and receives one from its left</text>\n",
      kLeftX, kMessageBytes);
  const int ring_x = (kWidth - kClusterBlocks * kBlockW - (kClusterBlocks - 1) * kBlockGap) / 2;
  for (const BlockTraffic& block : ring) {
    const int x = ring_x + static_cast<int>(block.rank) * (kBlockW + kBlockGap);
    const bool drawn = block.rank == sender || block.rank == receiver;
    box(x, kRingY, kBlockW, kBlockH, drawn ? kFills[0] : "#f4f4f4", drawn ? kEdges[0] : "#888888");
    put("<text x=\"%d\" y=\"%d\" font-size=\"13\" text-anchor=\"middle\">rank %u</text>\n",
        x + kBlockW / 2, kRingY + 25, block.rank);
    const int to_x = ring_x + static_cast<int>(block.sends_to) * (kBlockW + kBlockGap);
    if (block.sends_to == block.rank + 1) {
      arrow(x + kBlockW, kRingY + kBlockH / 2, to_x, kRingY + kBlockH / 2, false);
    } else {  // the way back, under the row
      const int y = kRingY + kBlockH + 22;
      put("<path d=\"M%d,%d V%d H%d V%d\" fill=\"none\" stroke=\"#333333\" stroke-width=\"1.5\" "
          "marker-end=\"url(#arrow)\"/>\n",
          x + kBlockW / 2, kRingY + kBlockH, y, to_x + kBlockW / 2, kRingY + kBlockH + 2);
      put("<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">rank %u writes into "
          "rank %u: ring_right(r) = r + 1, wrapping to 0</text>\n",
          kWidth / 2, y + 18, block.rank, block.sends_to);
    }
  }

  // One pair in detail: the sender's ready barriers, the receiver's buffers and filled barriers.
  put("<text x=\"%d\" y=\"%d\" font-size=\"14\" font-weight=\"bold\">One pair in detail, rank %u "
      "into rank %u (every pair alike)</text>\n",
      kLeftX, kPairY - 14, sender, receiver);
  box(kLeftX, kPairY, kBoxW, pair_h, "#fafafa", "#888888");
  box(kRightX, kPairY, kBoxW, pair_h, "#fafafa", "#888888");
  put("<text x=\"%d\" y=\"%d\" font-size=\"13\" font-weight=\"bold\">rank %u, the sender</text>\n",
      kLeftX + 16, kPairY + 22, sender);
  put("<text x=\"%d\" y=\"%d\" font-size=\"13\" font-weight=\"bold\">rank %u, the receiver"
      "</text>\n",
      kRightX + 16, kPairY + 22, receiver);
  for (int s = 0; s < kStages; ++s) {
    const int y = kPairY + 36 + s * kStageH;
    const int lx = kLeftX + 16, rx = kRightX + 16, mid = (kLeftX + kBoxW + kRightX) / 2;
    std::string uses;
    for (int it = 0; it < num_iterations; ++it) {
      if (waits[it].stage == s) uses += std::to_string(it) + ", ";
    }
    box(lx, y, kInnerW, 28, "#ffffff", "#888888");
    put("<text x=\"%d\" y=\"%d\" font-size=\"12\">registers: %d x 16 B per thread</text>\n",
        lx + 8, y + 19, kVecsPerThread);
    box(rx, y, kInnerW, 28, kFills[s % 4], kEdges[s % 4]);
    put("<text x=\"%d\" y=\"%d\" font-size=\"12\">smem_message[%d]: %zu B</text>\n", rx + 8,
        y + 19, s, kMessageBytes);
    box(lx, y + 46, kInnerW, 44, kFills[s % 4], kEdges[s % 4]);
    put("<text x=\"%d\" y=\"%d\" font-size=\"12\" font-weight=\"bold\">ready_bar[%d]: count %d"
        "</text>\n",
        lx + 8, y + 63, s, ready.arrivals);
    put("<text x=\"%d\" y=\"%d\" font-size=\"12\">waited on before sending</text>\n", lx + 8,
        y + 81);
    box(rx, y + 46, kInnerW, 44, kFills[s % 4], kEdges[s % 4]);
    put("<text x=\"%d\" y=\"%d\" font-size=\"12\" font-weight=\"bold\">filled_bar[%d]: count %d"
        "</text>\n",
        rx + 8, y + 63, s, filled.arrivals);
    put("<text x=\"%d\" y=\"%d\" font-size=\"12\">own arrive.expect_tx(%u)</text>\n", rx + 8,
        y + 81, filled.tx_bytes);
    // The bytes land in the buffer and complete the receiver's filled barrier.
    arrow(rx + kInnerW / 2, y + 28, rx + kInnerW / 2, y + 45, false);
    put("<text x=\"%d\" y=\"%d\" font-size=\"12\">complete-tx</text>\n", rx + kInnerW / 2 + 6,
        y + 41);
    arrow(lx + kInnerW, y + 14, rx, y + 14, false);
    put("<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">st.async: %d x 16 B</text>"
        "\n",
        mid, y + 9, filled.st_async_per_phase);
    put("<text x=\"%d\" y=\"%d\" font-size=\"12\" font-weight=\"bold\" text-anchor=\"middle\">"
        "stage %d: iterations %s...</text>\n",
        mid, y + 38, s, uses.c_str());
    arrow(rx, y + 68, lx + kInnerW, y + 68, true);
    put("<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">remote arrive, after "
        "</text>\n",
        mid, y + 62);
    put("<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">rank %u has read it"
        "</text>\n",
        mid, y + 84, receiver);
  }

  // The phases: which parity each wait of each iteration asks for.
  put("<text x=\"%d\" y=\"%d\" font-size=\"14\" font-weight=\"bold\">The phases: stage = iteration "
      "%% %d, phase = the parity of the buffer's use</text>\n",
      kLeftX, table_y, kStages);
  const int col[4] = {kLeftX, kLeftX + 90, kLeftX + 200, kLeftX + 462};
  const int head_y = table_y + 28;
  put("<text x=\"%d\" y=\"%d\" font-size=\"12\" font-weight=\"bold\">iteration</text>\n", col[0],
      head_y);
  put("<text x=\"%d\" y=\"%d\" font-size=\"12\" font-weight=\"bold\">stage, phase</text>\n", col[1],
      head_y);
  put("<text x=\"%d\" y=\"%d\" font-size=\"12\" font-weight=\"bold\">rank %u waits, then sends"
      "</text>\n",
      col[2], head_y, sender);
  put("<text x=\"%d\" y=\"%d\" font-size=\"12\" font-weight=\"bold\">rank %u waits, then reads"
      "</text>\n",
      col[3], head_y, receiver);
  for (int it = 0; it < num_iterations; ++it) {
    const RingWait& w = waits[it];
    const int y = head_y + (it + 1) * kRowH;
    put("<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n", kLeftX - 4, y - 15,
        kWidth - 2 * kLeftX + 8, kRowH - 2, kFills[w.stage % 4]);
    put("<text x=\"%d\" y=\"%d\" font-size=\"12\">%d</text>\n", col[0], y, it);
    put("<text x=\"%d\" y=\"%d\" font-size=\"12\">%d, %u</text>\n", col[1], y, w.stage,
        w.filled_parity);
    if (it < kStages) {
      put("<text x=\"%d\" y=\"%d\" font-size=\"12\">ready_bar[%d], parity %u: fresh, passes"
          "</text>\n",
          col[2], y, w.stage, w.ready_parity);
    } else {
      put("<text x=\"%d\" y=\"%d\" font-size=\"12\">ready_bar[%d], parity %u: message %d read"
          "</text>\n",
          col[2], y, w.stage, w.ready_parity, it - kStages);
    }
    put("<text x=\"%d\" y=\"%d\" font-size=\"12\">filled_bar[%d], parity %u: message %d</text>\n",
        col[3], y, w.stage, w.filled_parity, it);
  }
  const int legend_y = head_y + (num_iterations + 1) * kRowH + 10;
  arrow(kLeftX, legend_y, kLeftX + 40, legend_y, false);
  put("<text x=\"%d\" y=\"%d\" font-size=\"12\">st.async: its bytes land in the receiver's buffer "
      "and complete its filled_bar[s]</text>\n",
      kLeftX + 48, legend_y + 4);
  arrow(kLeftX, legend_y + 22, kLeftX + 40, legend_y + 22, true);
  put("<text x=\"%d\" y=\"%d\" font-size=\"12\">remote arrive (release, cluster scope): "
      "completes the sender's ready_bar[s]</text>\n",
      kLeftX + 48, legend_y + 26);
  put("<text x=\"%d\" y=\"%d\" font-size=\"12\">Drawn from ring_traffic, phase_counts and "
      "ring_waits (stas_cluster_model.hpp) by stas_cluster_figures.</text>\n",
      kLeftX, legend_y + 50);
  svg += "</svg>\n";
  return svg;
}

// The program's figures: what course::figures_main() writes and HostFigures checks.
constexpr const char* kFiguresProgram = "stas_cluster_figures";
inline std::vector<course::Figure> chapter_figures() {
  return {{"ring_10_stas_cluster.svg",
           [] { return ring_svg<kFigureStages>(kFigureIterations, kFigureSender); }}};
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) {
  return course::figures_main(kFiguresProgram, chapter_figures(), argc, argv);
}
#endif
