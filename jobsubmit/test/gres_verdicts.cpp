// The same verdicts as gres_verdicts.lua, from the C++ parser that owns the vgpu GRES grammar
// (libvgpu/core/gres_request.h) and the rules the filter applies to what it parsed: every type
// offered by the partition, at most `per_job` instances per node. One line in, one verdict out.
//   vgpu-test-gres-verdicts <corpus> <per_job> <type>...
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>

#include "vgpu/core/gres_request.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <corpus> <per_job> <type>...\n", argv[0]);
    return 2;
  }
  std::ifstream corpus(argv[1], std::ios::binary);
  const int per_job = std::atoi(argv[2]);
  const std::set<std::string> offered(argv + 3, argv + argc);
  std::string line;
  while (std::getline(corpus, line)) {
    auto requests = vgpu::parse_vgpu_gres(line);
    bool ok = requests.has_value();
    int total = 0;
    if (ok)
      for (const auto& r : *requests) {
        ok = ok && offered.contains(r.type);
        total += r.count;
      }
    std::puts(ok && total <= per_job ? "accept" : "refuse");
  }
  return 0;
}
