// Writes the chapter's concept figure, the life of a map edited on the device, computed by
// map_life_svg() from edit_address_life() in device_tensormap_model.hpp:
//   device_tensormap_figures DIR   ->  DIR/map_life.svg
//   build/09_device_tensormap/device_tensormap_figures 09_device_tensormap/figures
// The host tests HostFigures compare the committed file with the same function, byte for byte.
#include <sstream>
#include <string>
#include <vector>

#include "course/figures.hpp"
#include "device_tensormap_model.hpp"

// Escapes the characters SVG text cannot hold as they are.
inline std::string svg_text(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : std::string(1, c);
  return out;
}

// One row per step: its name, its instruction, and a mark in the lane of the proxy that writes
// or reads the map; a fence is a bar from the generic lane to the tensormap lane.
inline std::string map_life_svg() {
  const std::vector<MapStep> steps = edit_address_life();
  const int row = 46, top = 74, width = 720, lane_w = 92;
  const int lane_x[] = {424, 522, 620};  // host, generic proxy, tensormap proxy
  const char* const lane_names[] = {"host", "generic proxy", "tensormap proxy"};
  const int height = top + row * static_cast<int>(steps.size()) + 40;
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " << width << ' ' << height
      << "\" width=\"100%\" font-family=\"sans-serif\" font-size=\"13\">\n";
  svg << "<rect x=\"0\" y=\"0\" width=\"" << width << "\" height=\"" << height << "\" fill=\"#ffffff\"/>\n";
  svg << "<text x=\"10\" y=\"24\" font-size=\"15\" font-weight=\"bold\">The life of a map edited on the "
         "device (edit_address)</text>\n";
  svg << "<text x=\"10\" y=\"" << top - 14 << "\" font-weight=\"bold\">step</text>\n";
  svg << "<text x=\"84\" y=\"" << top - 14 << "\" font-weight=\"bold\">instruction</text>\n";
  for (int l = 0; l < 3; ++l) {
    svg << "<rect x=\"" << lane_x[l] << "\" y=\"" << top - 4 << "\" width=\"" << lane_w << "\" height=\""
        << row * static_cast<int>(steps.size()) << "\" fill=\"#f2f2f2\"/>\n";
    svg << "<text x=\"" << lane_x[l] + lane_w / 2 << "\" y=\"" << top - 14
        << "\" text-anchor=\"middle\" font-weight=\"bold\" font-size=\"12\">" << lane_names[l] << "</text>\n";
  }
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const MapStep& s = steps[i];
    const int y = top + row * static_cast<int>(i);
    svg << "<text x=\"10\" y=\"" << y + 24 << "\">" << svg_text(s.step) << "</text>\n";
    svg << "<text x=\"84\" y=\"" << y + 24 << "\" font-family=\"monospace\" font-size=\"12\">"
        << svg_text(s.instruction) << "</text>\n";
    if (s.op == MapOp::release || s.op == MapOp::acquire) {
      const int x0 = lane_x[1] + 8, x1 = lane_x[2] + lane_w - 8;
      svg << "<rect x=\"" << x0 << "\" y=\"" << y + 8 << "\" width=\"" << x1 - x0
          << "\" height=\"26\" rx=\"4\" fill=\"#fde0b0\" stroke=\"#a05a00\"/>\n";
      svg << "<text x=\"" << (x0 + x1) / 2 << "\" y=\"" << y + 26 << "\" text-anchor=\"middle\">"
          << (s.op == MapOp::release ? "release: generic writes first" : "acquire: drop cached copy")
          << "</text>\n";
      continue;
    }
    const int l = static_cast<int>(s.proxy);
    const bool write = s.op == MapOp::write;
    svg << "<rect x=\"" << lane_x[l] + 8 << "\" y=\"" << y + 8 << "\" width=\"" << lane_w - 16
        << "\" height=\"26\" rx=\"4\" fill=\"" << (write ? "#b3d4ff" : "#c8f0c8") << "\" stroke=\""
        << (write ? "#1f4e99" : "#2a7a2a") << "\"/>\n";
    svg << "<text x=\"" << lane_x[l] + lane_w / 2 << "\" y=\"" << y + 26 << "\" text-anchor=\"middle\">"
        << (write ? "writes" : "reads") << "</text>\n";
  }
  const int foot = top + row * static_cast<int>(steps.size()) + 26;
  svg << "<text x=\"10\" y=\"" << foot << "\">Without the release and the acquire, TMA may read the map "
         "as it was before the copy and the edit.</text>\n";
  svg << "</svg>\n";
  return svg.str();
}

// The program's figures: what course::figures_main() writes and HostFigures checks.
constexpr const char* kFiguresProgram = "device_tensormap_figures";
inline std::vector<course::Figure> chapter_figures() {
  return {{"map_life.svg", map_life_svg}};
}

#ifndef COURSE_NO_MAIN
int main(int argc, char** argv) {
  return course::figures_main(kFiguresProgram, chapter_figures(), argc, argv);
}
#endif
