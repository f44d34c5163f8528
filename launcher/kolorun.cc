// kolorun: starts a kolo job through Open MPI's mpirun. It checks what it can before anything
// starts, then becomes mpirun (exec), so the job's exit status is kolorun's and Ctrl-C or SIGTERM
// reach mpirun, which stops every rank.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "kolo/c_api.h"
#include "launch_checks.h"
#include "launch_options.h"
#include "mpirun_command.h"

extern char** environ;

using namespace kolo::launcher;

namespace {

int fail(const std::string& message) {
  std::cerr << "kolorun: " << message << "\n";
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
  if (options.check_build) {
    std::cout << kolo_build_summary();
    return 0;
  }

  Machine machine;
  machine.mpirun = find_mpirun();
  if (machine.mpirun.empty()) {
    return fail(std::getenv("KOLO_MPIRUN") ? std::string("KOLO_MPIRUN='") + std::getenv("KOLO_MPIRUN") +
                                                 "' is not an executable file"
                                           : "mpirun not found on PATH: install Open MPI (Debian: apt-get "
                                             "install openmpi-bin)");
  }
  machine.is_root = geteuid() == 0;
  machine.hostname = this_hostname();
  machine.env_names = environment_names();

  const std::vector<Host> hosts = effective_hosts(options);
  const int slots = total_slots(hosts);
  if (options.num_proc > slots) {
    std::string given;
    for (const Host& h : hosts) given += (given.empty() ? "" : ",") + h.name + ":" + std::to_string(h.slots);
    return fail("-np " + std::to_string(options.num_proc) + " is more than the " + std::to_string(slots) +
                " slots given (" + (options.hostfile.empty() ? "-H " + given : "hostfile " + options.hostfile) + ")");
  }

  const MpirunCommand cmd = build_mpirun_command(options, machine);
  std::string env_text;
  for (const auto& kv : cmd.set_env) env_text += kv.first + "=" + kv.second + " ";
  if (options.dry_run) {
    std::cout << env_text << shell_join(cmd.argv) << "\n";
    return 0;
  }
  const std::vector<std::string> unreachable =
      unreachable_hosts(hosts, machine.hostname, options.rsh_agent, options.start_timeout_seconds);
  if (!unreachable.empty()) {
    for (const std::string& m : unreachable) std::cerr << "kolorun: " << m << "\n";
    return 2;
  }
  if (options.verbose) std::cerr << "kolorun: " << env_text << shell_join(cmd.argv) << "\n";

  for (const auto& kv : cmd.set_env) setenv(kv.first.c_str(), kv.second.c_str(), 1);
  std::vector<char*> args;
  std::vector<std::string> words = cmd.argv;
  for (std::string& w : words) args.push_back(&w[0]);
  args.push_back(nullptr);
  execv(machine.mpirun.c_str(), args.data());
  return fail("cannot run " + machine.mpirun + ": " + std::strerror(errno));
}
