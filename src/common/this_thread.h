// The calling thread's name and scheduling priority, as tools (top -H, ps -L, perf) and the kernel see them.
#pragma once

#include <string>

#include "kolo/status.h"

namespace kolo {

// Names the calling thread (at most 15 characters are kept, the kernel's limit).
void name_this_thread(const std::string& name);

// Lowers the calling thread's priority to nice value `nice` (0-19, which needs no privilege); a thread
// already at that value or lower in priority is left as it is. Threads it starts afterwards inherit it.
Status set_this_thread_nice(int nice);

}  // namespace kolo
