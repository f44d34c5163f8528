// Elastic mode's stop signals: kolorun stays mpirun's parent, so SIGINT and SIGTERM go on to mpirun,
// which stops every rank; nothing restarts after one. Also the pauses between attempts, which a
// stop signal cuts short, and the clock they run on.
#pragma once

#include <sys/types.h>

namespace kolo {
namespace launcher {

// From now on SIGINT and SIGTERM are remembered and passed on to the mpirun set_mpirun_pid() names.
void install_stop_handlers();

// The stop signal that came; 0 if none.
int stop_signal();

// The mpirun running now, to pass a stop signal on to; 0: none.
void set_mpirun_pid(pid_t pid);

// Seconds on a steady clock.
double now();

// Sleeps, waking early for a stop signal; false if one came.
bool pause_for(double seconds);

}  // namespace launcher
}  // namespace kolo
