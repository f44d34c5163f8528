// kolorun --gloo: a job without mpirun. kolorun serves the job's key-value store (src/store, with a random
// token only the job's ranks get), starts every rank itself (here by fork and exec, on other hosts through
// ssh or the --rsh-agent; inside a Slurm allocation through one srun), and watches them: the first rank to
// fail (a status other than 0, or a signal) ends the job, named, as mpirun ends one, and kolorun exits
// with its status. Ctrl-C or SIGTERM stop every rank. The ranks form the Gloo world (src/comm/gloo).
#pragma once

#include <sys/types.h>

#include <string>

#include "launch_options.h"
#include "mpirun_command.h"

namespace kolo {
namespace launcher {

// Runs the job to its end; kolorun's exit status.
int run_gloo(const LaunchOptions& options, const Machine& machine, bool in_slurm_allocation);

// One attempt of an elastic kolorun --gloo (launcher/elastic_launch.h): run_gloo in a child process, its
// standard output and error into pipes read from *out_fd and *err_fd (non-blocking), as mpirun's are; -1
// with why when it did not start.
pid_t start_gloo_attempt(const LaunchOptions& options, const Machine& machine, int* out_fd, int* err_fd,
                         std::string* error);

}  // namespace launcher
}  // namespace kolo
