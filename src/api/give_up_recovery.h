// The end of a recovery in place that cannot finish (runtime.cc bounds it by KOLO_RECOVERY_TIMEOUT_SECONDS):
// the rank says so, in words kolorun reads (launcher/in_place_reports.h), and exits with status 1; kolorun
// then ends mpirun, which still waits for the lost process, and restarts the job from its last commit.
#pragma once

namespace kolo {

// Called on a thread of its own while the recovering thread is blocked in MPI: takes no lock and runs no
// exit handler (they could wait on that thread).
[[noreturn]] void give_up_recovery(int rank, int size, double seconds);

}  // namespace kolo
