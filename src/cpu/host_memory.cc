#include "cpu/host_memory.h"

#include <cstdlib>
#include <string>

namespace kolo {

Status host_memory(int64_t bytes, std::shared_ptr<void>* storage) {
  const size_t rounded = (static_cast<size_t>(bytes) + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (p == nullptr) return Status::Internal("out of host memory for " + std::to_string(bytes) + " bytes");
  *storage = std::shared_ptr<void>(p, std::free);
  return Status::OK();
}

}  // namespace kolo
