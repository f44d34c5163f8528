// A copy whose stores bypass the cache (non-temporal): for results larger than the cache that nothing
// reads next, it saves the read that a cached store of a line not in cache makes first, a third of the
// memory traffic of a copy. Where the CPU has no such stores (not x86-64), a memcpy.
#pragma once

#include <cstddef>

namespace kolo {

void stream_copy(void* to, const void* from, size_t bytes);
// Makes the streamed stores visible to other threads in order with the stores after it.
void stream_fence();

}  // namespace kolo
