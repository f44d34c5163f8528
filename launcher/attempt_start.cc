#include "attempt_start.h"

#include <cstdio>

namespace kolo {
namespace launcher {

int started_ranks(const std::string& line) {
  const size_t at = line.find("kolo: all ");
  if (at == std::string::npos) return 0;
  int n = 0, end = 0;
  if (std::sscanf(line.c_str() + at, "kolo: all %d ranks have started%n", &n, &end) != 1 || end == 0) return 0;
  return n > 0 ? n : 0;
}

}  // namespace launcher
}  // namespace kolo
