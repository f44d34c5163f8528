#include "forwarded_environment.h"

#include <cctype>

namespace kolo {
namespace launcher {
namespace {

bool matches(const std::string& pattern, const std::string& name) {
  if (!pattern.empty() && pattern.back() == '*') return name.compare(0, pattern.size() - 1, pattern, 0, pattern.size() - 1) == 0;
  if (!pattern.empty() && pattern.front() == '*') {
    const size_t n = pattern.size() - 1;
    return name.size() >= n && name.compare(name.size() - n, n, pattern, 1, n) == 0;
  }
  return name == pattern;
}

bool valid_name(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

}  // namespace

const std::vector<HostSpecificVariables>& host_specific_variables() {
  static const std::vector<HostSpecificVariables> groups = {
      {{"HOSTNAME", "HOST"}, "this host's name"},
      {{"PWD", "OLDPWD", "SHLVL", "_"},
       "the shell's own (ranks start in kolorun's working directory, and Open MPI sets their PWD)"},
      {{"SSH_*"}, "this login's ssh connection and agent socket"},
      {{"DISPLAY", "XAUTHORITY", "WINDOWID", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", "XDG_SESSION_*",
        "XDG_SEAT", "XDG_VTNR", "TMUX", "TMUX_PANE", "STY"},
       "this desktop or terminal session"},
      {{"*CUDA_VISIBLE_DEVICES"},
       "this host's GPUs (ranks on this host still inherit it from mpirun; horovodrun leaves it out too)"},
      {{"SLURM_*", "SLURMD_*"},
       "this host's view of a Slurm allocation and job step (Slurm gives every host its own)"},
      {{"OMPI_*", "PMIX_*", "PMI_*", "PRTE_*", "ORTE_*"},
       "Open MPI's and PMIx's: mpirun reads its OMPI_MCA_* settings itself and passes them on; the others "
       "describe one process of a running job"},
      {{"HOROVOD_SECRET_KEY"}, "horovodrun's own secret"},
  };
  return groups;
}

bool forwarded_to_ranks(const std::string& name) {
  if (!valid_name(name)) return false;
  for (const HostSpecificVariables& g : host_specific_variables()) {
    for (const std::string& p : g.patterns) {
      if (matches(p, name)) return false;
    }
  }
  return true;
}

}  // namespace launcher
}  // namespace kolo
