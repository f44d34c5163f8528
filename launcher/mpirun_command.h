// The Open MPI mpirun command a kolorun command line stands for. Pure: everything it needs about
// the machine comes in `Machine`, so the translation is tested as a table of inputs and outputs.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "launch_options.h"

namespace kolo {
namespace launcher {

struct Machine {
  std::string mpirun = "mpirun";      // path of mpirun
  bool is_root = false;
  std::string hostname;               // this host's name, to tell local hosts from remote ones
  std::vector<std::string> env_names; // names set in kolorun's environment
  // Inside a Slurm allocation, with no hosts given: mpirun places the ranks by the allocation, no -H.
  bool placed_by_slurm = false;
  // In place: libkolo_ompi_guard.so, preloaded into the ranks (empty: not found), and the launching
  // environment's own LD_PRELOAD, kept after it.
  std::string ompi_guard;
  std::string ld_preload;
};

struct MpirunCommand {
  std::vector<std::string> argv;  // mpirun, its options, then the user's command
  // Set in mpirun's environment before it starts; ranks get them through -x NAME, so values
  // (tokens, say) never appear on a command line that `ps` shows to other users.
  std::vector<std::pair<std::string, std::string>> set_env;
};

MpirunCommand build_mpirun_command(const LaunchOptions& options, const Machine& machine);

// The hosts to run on: those given, or this host with num_proc slots (elastic mode without -np:
// --max-np, else --min-np). Not for --host-discovery-script's hosts (launcher/host_discovery.h).
std::vector<Host> effective_hosts(const LaunchOptions& options);
int total_slots(const std::vector<Host>& hosts);
bool is_local_host(const std::string& host, const std::string& hostname);

// "a:2,b:1", as -H takes them.
std::string host_list_text(const std::vector<Host>& hosts);

// Why `mpirun` (whose --version says `version_line`) cannot run an --in-place job: it is not Open
// MPI 5 or later, the first with ULFM. Empty when it can.
std::string in_place_refusal(const std::string& mpirun, const std::string& version_line);

// For printing: each word quoted when a shell would need it.
std::string shell_join(const std::vector<std::string>& words);
// For printing: "NAME=VALUE ... mpirun ...", the environment it gets, then the command.
std::string command_text(const MpirunCommand& cmd);

}  // namespace launcher
}  // namespace kolo
