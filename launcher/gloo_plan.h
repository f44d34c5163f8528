// What kolorun --gloo starts, worked out before anything runs (pure, tested as a table): where each rank
// goes, what each rank's environment carries (the Gloo world's store, its place in the job: comm/launcher_env.h
// reads it), and how a rank on another host is started (ssh or the --rsh-agent, its environment sent on
// standard input, so that no value, the store's token least of all, is on a command line `ps` shows).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "launch_options.h"

namespace kolo {
namespace launcher {

struct GlooRank {
  int rank = 0;
  std::string host;   // as given; this host's name where none was given
  bool local = true;  // runs here, forked, rather than through ssh or the agent
  int local_rank = 0, local_size = 1;
};

// Hosts filled in the order given, each up to its slots.
std::vector<GlooRank> plan_gloo_ranks(const std::vector<Host>& hosts, int num_proc, const std::string& hostname);

struct GlooStoreAddress {
  std::string host;  // what the ranks connect to (KOLO_STORE_ADDR)
  int port = 0;
  std::string token;
  std::string job_id;
};

// What rank `r` gets beyond the launching environment: the store, its place, the settings and -x variables.
std::vector<std::pair<std::string, std::string>> gloo_rank_environment(const LaunchOptions& options,
                                                                       const GlooRank& r, int size,
                                                                       const GlooStoreAddress& store);

// The argv that starts `command` on a remote host: the agent (ssh -o BatchMode=yes, with -p and -i, or the
// --rsh-agent), the host, and one remote command line: change to `dir`, read NAME=VALUE lines from standard
// input up to an empty one, export each, and exec the command.
std::vector<std::string> remote_rank_argv(const LaunchOptions& options, const std::string& host, const std::string& dir,
                                          const std::vector<std::string>& command);

// A word as a POSIX shell reads it back, quoted where it must be.
std::string shell_quote(const std::string& word);

}  // namespace launcher
}  // namespace kolo
