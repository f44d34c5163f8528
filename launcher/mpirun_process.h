// Running mpirun: in place of kolorun (exec), or, in elastic mode, as kolorun's child whose standard
// output and error kolorun reads.
#pragma once

#include <sys/types.h>

#include <string>

#include "mpirun_command.h"

namespace kolo {
namespace launcher {

// Replaces this process with mpirun running `cmd`, its set_env put in the environment. Returns only
// when that fails, with why.
std::string exec_mpirun(const std::string& mpirun, const MpirunCommand& cmd);

// Forks and execs mpirun, its standard output and error into pipes read from *out_fd and *err_fd
// (non-blocking); -1 with why when it did not start (not worth a restart).
pid_t start_mpirun(const std::string& mpirun, const MpirunCommand& cmd, int* out_fd, int* err_fd, std::string* error);

}  // namespace launcher
}  // namespace kolo
