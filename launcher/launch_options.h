// kolorun's command line, parsed: what the user asked for, before anything is checked against the
// machine (launcher/launch_checks.h) or turned into an mpirun command (launcher/mpirun_command.h).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kolo {
namespace launcher {

struct Host {
  std::string name;
  int slots = 1;
};

struct LaunchOptions {
  int num_proc = 0;                  // -np; 0 when not given (launcher/slurm_allocation.h settles it)
  std::vector<Host> hosts;           // -H or --hostfile; empty: this host, with num_proc slots
  std::string hostfile;              // as given, for messages
  bool verbose = false;
  bool dry_run = false;
  bool check_build = false;
  bool version = false;              // --version: print kolo's version, start nothing
  bool help = false;
  double start_timeout_seconds = 30;
  // Elastic: every rank of an attempt must have started (kolo initialized) this long after mpirun
  // starts, else kolorun ends the attempt and restarts (a rank frozen in MPI's start-up holds all).
  // --start-timeout sets it too.
  double ranks_start_timeout_seconds = 120;
  std::string network_interface;     // one or more, comma-separated (horovodrun's --network-interfaces)
  std::string rsh_agent;             // reaches other hosts; empty: ssh
  std::string ssh_port;              // -p: given to ssh (kolorun's own checks and mpirun's)
  std::string ssh_identity_file;     // -i: the same
  std::vector<std::string> mpi_args; // --mpi-args, split as a shell would
  std::vector<std::string> binding_args;  // --binding-args: in place of "--bind-to none --map-by slot"
  std::string output_filename;       // --output-filename: mpirun writes each rank's output under it
  bool timestamp_output = false;     // --prefix-output-with-timestamp
  bool tcp = false;                  // --tcp: Open MPI's ob1 over TCP, as horovodrun asks
  std::string config_file;           // --config-file: horovodrun's YAML, read into `settings`
  // KOLO_* settings from options, in the order given.
  std::vector<std::pair<std::string, std::string>> settings;
  // -x: variables to forward (value empty and has_value false) or set.
  struct EnvVar {
    std::string name, value;
    bool has_value = false;
  };
  std::vector<EnvVar> env;
  std::vector<std::string> command;  // the program and its arguments
  // --gloo (or KOLO_CONTROLLER=gloo where kolorun runs): no mpirun (launcher/gloo_launch.h). Set by main
  // from the settings, not parsed.
  bool gloo = false;

  // Elastic mode (launcher/elastic_launch.h): on when --min-np, --max-np or
  // --host-discovery-script is given. Then num_proc, if given, is the first attempt's count.
  int min_np = 0;                    // 0: not given (then 1)
  int max_np = 0;                    // 0: not given (no cap but the slots)
  std::string discovery_script;      // prints "host:slots" lines; replaces -H/--hostfile
  double elastic_timeout_seconds = 600;    // how long to wait for --min-np slots
  int reset_limit = -1;              // restarts allowed after failures; -1: no limit
  double discovery_interval_seconds = 1.0; // how often the script runs
  int blacklist_after = 2;           // failures blamed on one host before it is left out; 0: never
  // --blacklist-cooldown-range: a host left out comes back after a cooldown in this range (seconds),
  // longer each time; 0: it is left out for good.
  double cooldown_low_seconds = 0, cooldown_high_seconds = 0;
  int slots_per_host = 1;            // a discovered host printed without a slot count has this many
  // --in-place: a lost rank is cut out of the running job (Open MPI 5's ULFM) instead of ending the
  // attempt; turns elastic mode on.
  bool in_place = false;
  // -p and -i as ssh's own options.
  std::vector<std::string> ssh_args() const;
  bool elastic() const { return min_np > 0 || max_np > 0 || !discovery_script.empty() || in_place; }
};

// Parses argv[1..]. On error returns false with a message meant for the user in `error`.
bool parse_command_line(const std::vector<std::string>& args, LaunchOptions* out, std::string* error);
// -H syntax: "a:2,b:2,c" (no slot count: 1).
bool parse_host_list(const std::string& text, std::vector<Host>* hosts, std::string* error);
// Lines "host slots=N", "host:N" or "host"; '#' starts a comment.
bool parse_hostfile_text(const std::string& text, std::vector<Host>* hosts, std::string* error);
// Splits like a POSIX shell: whitespace separates, quotes and backslashes group.
bool split_shell_words(const std::string& text, std::vector<std::string>* words, std::string* error);

const std::string& usage();

}  // namespace launcher
}  // namespace kolo
