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

// Lets the calling thread's short sleeps end when asked: Linux lets a timed sleep of an ordinary thread
// run up to 50 us late (its timer slack), which for a thread polling device work every 10 us means
// hearing of it five times later. Threads it starts afterwards inherit it.
void tighten_this_thread_timers();

}  // namespace kolo
