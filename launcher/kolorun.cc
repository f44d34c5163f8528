// kolorun: starts a kolo job through Open MPI's mpirun (inside a Slurm allocation, on the allocation's
// hosts). It checks what it can before anything starts, then becomes mpirun (exec), so the job's exit
// status is kolorun's and Ctrl-C or SIGTERM reach mpirun, which stops every rank. In elastic mode it
// stays mpirun's parent instead, to start it again (launcher/elastic_launch.h).
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "default_hostfile.h"
#include "elastic_launch.h"
#include "gloo_launch.h"
#include "kolo/c_api.h"
#include "kolo_build_choices.h"
#include "launch_checks.h"
#include "launch_options.h"
#include "launcher_messages.h"
#include "mpirun_command.h"
#include "mpirun_process.h"
#include "slurm_allocation.h"

extern char** environ;

using namespace kolo::launcher;

namespace {

int fail(const std::string& message) {
  say() << message << "\n";
  return 2;
}

std::vector<std::string> environment_names() {
  std::vector<std::string> names;
  for (char** e = environ; *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq != nullptr) names.emplace_back(*e, static_cast<size_t>(eq - *e));
  }
  return names;
}

std::string this_hostname() {
  char name[256] = {0};
  gethostname(name, sizeof name - 1);
  return name;
}

// libkolo_ompi_guard.so beside the libkolo this kolorun runs with (build tree, install, wheel alike);
// empty where it is not there.
std::string ompi_guard_path() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&kolo_version), &info) == 0 || info.dli_fname == nullptr) return "";
  std::string dir = info.dli_fname;
  const size_t slash = dir.rfind('/');
  dir = slash == std::string::npos ? "." : dir.substr(0, slash);
  const std::string guard = dir + "/libkolo_ompi_guard.so";
  return access(guard.c_str(), R_OK) == 0 ? guard : "";
}

}  // namespace

int main(int argc, char** argv) {
  LaunchOptions options;
  std::string error;
  if (!parse_command_line(std::vector<std::string>(argv + 1, argv + argc), &options, &error)) {
    return fail(error + "\n(kolorun --help for usage)");
  }
  if (options.help) {
    std::cout << usage();
    return 0;
  }
  if (options.version) {
    std::cout << "kolorun (kolo) " << kolo_version() << "\n";
    return 0;
  }
  if (options.check_build) {
    std::cout << kolo_build_summary() << KOLO_BUILD_CHOICES;
    return 0;
  }

  // --gloo (or KOLO_CONTROLLER=gloo where kolorun runs): no mpirun (launcher/gloo_launch.h).
  std::string controller = std::getenv("KOLO_CONTROLLER") != nullptr ? std::getenv("KOLO_CONTROLLER") : "";
  for (const auto& kv : options.settings) {
    if (kv.first == "KOLO_CONTROLLER") controller = kv.second;
  }
  const bool gloo = controller == "gloo" || controller == "GLOO" || controller == "Gloo";

  SlurmAllocation allocation;
  const bool in_allocation =
      find_slurm_allocation([](const char* name) { return std::getenv(name); }, &allocation, &error);
  if (!error.empty() && wants_allocation(options)) return fail(error);
  if (!in_allocation && !take_default_hostfile([](const char* name) { return std::getenv(name); }, &options, &error) &&
      !error.empty()) {
    return fail(error);
  }
  if (!settle_rank_count(in_allocation ? &allocation : nullptr, &options, &error)) return fail(error);

  Machine machine;
  machine.placed_by_slurm = placed_by_slurm(in_allocation ? &allocation : nullptr, options);
  machine.mpirun = gloo ? "" : find_mpirun();
  // A dry run only prints the command: it may be made on a machine without Open MPI.
  if (machine.mpirun.empty() && options.dry_run && !std::getenv("KOLO_MPIRUN")) machine.mpirun = "mpirun";
  options.gloo = gloo;
  if (machine.mpirun.empty() && !gloo) {
    return fail(std::getenv("KOLO_MPIRUN") ? std::string("KOLO_MPIRUN='") + std::getenv("KOLO_MPIRUN") +
                                                 "' is not an executable file"
                                           : "mpirun not found on PATH: install Open MPI (Debian: apt-get "
                                             "install openmpi-bin)");
  }
  if (options.in_place && !options.dry_run && !gloo) {
    const std::string refusal = in_place_refusal(machine.mpirun, mpirun_version(machine.mpirun));
    if (!refusal.empty()) return fail(refusal);
  }
  machine.is_root = geteuid() == 0;
  machine.hostname = this_hostname();
  machine.env_names = environment_names();
  if (options.in_place && !gloo) {
    machine.ompi_guard = ompi_guard_path();
    if (const char* p = std::getenv("LD_PRELOAD")) machine.ld_preload = p;
  }

  // Inside an allocation mpirun reaches the hosts through Slurm, and settle_rank_count checked the count.
  if (options.discovery_script.empty() && !machine.placed_by_slurm) {
    const std::vector<Host> hosts = effective_hosts(options);
    const int slots = total_slots(hosts);
    // Elastic mode runs on the slots there are, but needs --min-np of them.
    const int needed = options.elastic() ? std::max(1, options.min_np) : options.num_proc;
    if (needed > slots) {
      const std::string given = host_list_text(hosts);
      return fail((options.elastic() ? "--min-np " : "-np ") + std::to_string(needed) + " is more than the " +
                  std::to_string(slots) + " slots given (" +
                  (options.hostfile.empty() ? "-H " + given : "hostfile " + options.hostfile) + ")");
    }
    if (!options.dry_run) {
      const std::vector<std::string> unreachable =
          unreachable_hosts(hosts, machine.hostname, options.rsh_agent, options.ssh_args(),
                            options.start_timeout_seconds);
      for (const std::string& m : unreachable) say() << m << "\n";
      if (!unreachable.empty()) return 2;
    }
  }
  if (options.elastic()) return run_elastic(options, machine);
  if (gloo) return run_gloo(options, machine, machine.placed_by_slurm);

  const MpirunCommand cmd = build_mpirun_command(options, machine);
  if (options.dry_run) {
    std::cout << command_text(cmd) << "\n";
    return 0;
  }
  if (options.verbose) say() << command_text(cmd) << "\n";
  return fail(exec_mpirun(machine.mpirun, cmd));
}
