// Open MPI 5's mpirun (PRRTE) keeps its PMIx rendezvous files in a session directory named for its
// pid, <tmpdir>/ompi.<pid>, and removes it when it ends. One killed (SIGKILL: kolorun ending a job
// that waits for a frozen rank, a user's kill -9) leaves it behind, and the next mpirun that gets the
// same pid finds it and fails at once ("The PMIx server's listener thread failed to start", status
// 213). A directory named for a pid that is ours, or that we have just reaped, belongs to no one alive.
#pragma once

#include <sys/types.h>

namespace kolo {
namespace launcher {

// Removes <tmpdir>/ompi.<pid> and all in it if it is there and this user's, <tmpdir> found as PRRTE finds
// it. Safe between fork and exec in a single-threaded process (kolorun).
void remove_session_dir(pid_t pid);

}  // namespace launcher
}  // namespace kolo
