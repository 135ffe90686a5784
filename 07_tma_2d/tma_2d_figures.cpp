// Writes the chapter's concept figure, computed by box_fill_svg() from the model's
// loads_from_matrix(): which elements of a box at the matrix's edge are loaded, which are zeros.
//   tma_2d_figures DIR   ->  DIR/box_fill.svg
//   build/07_tma_2d/tma_2d_figures 07_tma_2d/figures   (regenerates the committed figure)
// The host test HostFigures compares the committed file with the same function, byte for byte,
// and runs its command line.
#include <sstream>
#include <string>
#include <vector>

#include "course/figures.hpp"
#include "tma_2d_model.hpp"

// A small matrix and box, so that every element can be drawn: the rule is the lesson's.
struct FillFigure {
  MatrixView matrix{8, 12, 12};  // 8 rows x 12 columns
  int box_cols = 8, box_rows = 5;
  struct Box {
    const char* label;
    int x, y;  // the box's top-left element: {column, row}, as the kernel's coordinates
  };
  Box boxes[2] = {{"A", -4, -3}, {"B", 8, 5}};
};

inline std::string box_fill_svg(const FillFigure& f = {}) {
  constexpr int kCell = 26, kLeft = 56, kTop = 44;
  constexpr int kFirstCol = -4, kFirstRow = -3, kCols = 20, kRows = 14;  // the drawn window
  const auto px = [&](int col) { return kLeft + (col - kFirstCol) * kCell; };
  const auto py = [&](int row) { return kTop + (row - kFirstRow) * kCell; };
  const int height = py(kFirstRow + kRows) + 112;
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 720 " << height
    << "\" width=\"100%\" font-family=\"sans-serif\" font-size=\"13\">\n"
    << "<rect x=\"0\" y=\"0\" width=\"720\" height=\"" << height << "\" fill=\"#ffffff\"/>\n"
    << "<text x=\"" << kLeft << "\" y=\"22\" font-size=\"15\">A " << f.box_cols << " x "
    << f.box_rows << " box loaded at two places of a " << f.matrix.cols << " x " << f.matrix.rows
    << " matrix (columns x rows)</text>\n";
  for (int col = kFirstCol; col < kFirstCol + kCols; col += 4) {  // column numbers (x)
    s << "<text x=\"" << px(col) + 4 << "\" y=\"" << kTop - 6 << "\" font-size=\"12\">" << col
      << "</text>\n";
  }
  for (int row = kFirstRow; row < kFirstRow + kRows; ++row) {  // row numbers (y)
    s << "<text x=\"" << kLeft - 8 << "\" y=\"" << py(row) + 18
      << "\" font-size=\"12\" text-anchor=\"end\">" << row << "</text>\n";
  }
  // The matrix's elements, then each box's: loaded (from the model) or zero-filled.
  for (int row = 0; row < f.matrix.rows; ++row) {
    for (int col = 0; col < f.matrix.cols; ++col) {
      s << "<rect x=\"" << px(col) << "\" y=\"" << py(row) << "\" width=\"" << kCell
        << "\" height=\"" << kCell << "\" fill=\"#e6e6e6\" stroke=\"#b0b0b0\"/>\n";
    }
  }
  int loaded[2] = {0, 0};
  for (int b = 0; b < 2; ++b) {
    const FillFigure::Box& box = f.boxes[b];
    for (int r = 0; r < f.box_rows; ++r) {
      for (int c = 0; c < f.box_cols; ++c) {
        const bool from_matrix = loads_from_matrix(f.matrix, box.x, box.y, r, c);
        loaded[b] += from_matrix;
        s << "<rect x=\"" << px(box.x + c) << "\" y=\"" << py(box.y + r) << "\" width=\"" << kCell
          << "\" height=\"" << kCell << "\" fill=\"" << (from_matrix ? "#8bbbe8" : "#fbd9b4")
          << "\" stroke=\"#b0b0b0\"/>\n";
        if (!from_matrix) {
          s << "<text x=\"" << px(box.x + c) + kCell / 2 << "\" y=\"" << py(box.y + r) + 18
            << "\" font-size=\"12\" text-anchor=\"middle\" fill=\"#7a4a12\">0</text>\n";
        }
      }
    }
    s << "<rect x=\"" << px(box.x) << "\" y=\"" << py(box.y) << "\" width=\""
      << f.box_cols * kCell << "\" height=\"" << f.box_rows * kCell
      << "\" fill=\"none\" stroke=\"#1d3f73\" stroke-width=\"3\"/>\n";
  }
  s << "<rect x=\"" << px(0) << "\" y=\"" << py(0) << "\" width=\"" << f.matrix.cols * kCell
    << "\" height=\"" << f.matrix.rows * kCell
    << "\" fill=\"none\" stroke=\"#000000\" stroke-width=\"2\"/>\n";
  // Labels next to the boxes, in empty cells of the window.
  s << "<text x=\"" << px(f.boxes[0].x + f.box_cols) + 8 << "\" y=\"" << py(f.boxes[0].y) + 18
    << "\" font-size=\"14\" fill=\"#1d3f73\">A: box at (" << f.boxes[0].x << ", "
    << f.boxes[0].y << ")</text>\n";
  s << "<text x=\"" << px(f.boxes[1].x) - 8 << "\" y=\"" << py(f.boxes[1].y + f.box_rows - 1) + 18
    << "\" font-size=\"14\" text-anchor=\"end\" fill=\"#1d3f73\">B: box at (" << f.boxes[1].x
    << ", " << f.boxes[1].y << ")</text>\n";
  // The legend and what the barrier expects.
  const int legend_y = py(kFirstRow + kRows) + 16;
  const char* const swatches[3][2] = {{"#8bbbe8", "loaded from the matrix"},
                                      {"#fbd9b4", "outside: filled with zeros"},
                                      {"#e6e6e6", "matrix element in no box"}};
  for (int i = 0; i < 3; ++i) {
    const int x = kLeft + i * 220;
    s << "<rect x=\"" << x << "\" y=\"" << legend_y << "\" width=\"18\" height=\"18\" fill=\""
      << swatches[i][0] << "\" stroke=\"#b0b0b0\"/>\n"
      << "<text x=\"" << x + 24 << "\" y=\"" << legend_y + 14 << "\" font-size=\"12\">"
      << swatches[i][1] << "</text>\n";
  }
  const int box_elems = f.box_cols * f.box_rows;
  for (int b = 0; b < 2; ++b) {
    s << "<text x=\"" << kLeft << "\" y=\"" << legend_y + 44 + 22 * b << "\">" << f.boxes[b].label
      << ": " << loaded[b] << " of " << box_elems << " elements loaded, " << box_elems - loaded[b]
      << " zeros; the barrier expects all " << box_elems << " x 4 = " << box_elems * 4
      << " bytes</text>\n";
  }
  s << "</svg>\n";
  return s.str();
}

// The program's figures: what course::figures_main() writes and HostFigures checks.
constexpr const char* kFiguresProgram = "tma_2d_figures";
inline std::vector<course::Figure> chapter_figures() {
  return {{"box_fill.svg", [] { return box_fill_svg(); }}};
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) {
  return course::figures_main(kFiguresProgram, chapter_figures(), argc, argv);
}
#endif
