// The hostfile a cluster's launcher writes for mpirun: Kubeflow's MPI Operator and Trainer mount one in the
// launcher pod (/etc/mpi/hostfile) and name it in OMPI_MCA_orte_default_hostfile (Open MPI 5's mpirun reads
// PRTE_MCA_prte_default_hostfile). kolorun given no -H, --hostfile or discovery script takes the hosts and
// slots from it, as it takes a Slurm allocation's, and -np defaults to their slots.
#pragma once

#include <functional>
#include <string>

#include "launch_options.h"

namespace kolo {
namespace launcher {

// True where `options` now has the default hostfile's hosts (and, if -np was not given outside elastic mode,
// their slots as -np); false with `error` empty where there is none to take, or with it set where the file
// named cannot be read or parsed.
bool take_default_hostfile(const std::function<const char*(const char*)>& getenv, LaunchOptions* options,
                           std::string* error);

}  // namespace launcher
}  // namespace kolo
