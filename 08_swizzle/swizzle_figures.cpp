// Writes one SVG figure per swizzle mode, computed by swizzle_svg() from swizzled_chunk():
//   swizzle_figures DIR   ->  DIR/swizzle_none.svg, swizzle_32B.svg, swizzle_64B.svg, swizzle_128B.svg
// The host test HostFigures compares the committed files with the same function, byte for byte.
#include <fstream>
#include <iostream>
#include <string>

#include "swizzle_layout.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " DIR\n";
    return 2;
  }
  for (Swizzle mode : kAllSwizzles) {
    const std::string path = std::string(argv[1]) + "/swizzle_" + swizzle_tag(mode) + ".svg";
    std::ofstream file(path, std::ios::binary);
    file << swizzle_svg(mode);
    if (!file) {
      std::cerr << "cannot write " << path << '\n';
      return 1;
    }
    std::cout << "wrote " << path << '\n';
  }
  return 0;
}
