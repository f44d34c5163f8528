#include "gloo_plan.h"

#include <algorithm>

#include "mpirun_command.h"

namespace kolo {
namespace launcher {

std::vector<GlooRank> plan_gloo_ranks(const std::vector<Host>& hosts, int num_proc, const std::string& hostname) {
  std::vector<GlooRank> ranks;
  for (const Host& h : hosts) {
    const int here = std::min(h.slots, num_proc - static_cast<int>(ranks.size()));
    for (int i = 0; i < here; ++i) {
      GlooRank r;
      r.rank = static_cast<int>(ranks.size());
      r.host = h.name;
      r.local = is_local_host(h.name, hostname);
      r.local_rank = i;
      r.local_size = here;
      ranks.push_back(r);
    }
    if (static_cast<int>(ranks.size()) == num_proc) break;
  }
  return ranks;
}

std::vector<std::pair<std::string, std::string>> gloo_rank_environment(const LaunchOptions& options,
                                                                       const GlooRank& r, int size,
                                                                       const GlooStoreAddress& store) {
  std::vector<std::pair<std::string, std::string>> env = {
      {"KOLO_STORE_ADDR", store.host},
      {"KOLO_STORE_PORT", std::to_string(store.port)},
      {"KOLO_STORE_TOKEN", store.token},
      {"KOLO_JOB_ID", store.job_id},
      {"RANK", std::to_string(r.rank)},
      {"WORLD_SIZE", std::to_string(size)},
      {"LOCAL_RANK", std::to_string(r.local_rank)},
      {"LOCAL_WORLD_SIZE", std::to_string(r.local_size)},
  };
  // The interface kolorun was told to use carries the Gloo world's connections too.
  if (!options.network_interface.empty()) {
    const std::string first = options.network_interface.substr(0, options.network_interface.find(','));
    if (first.find('/') == std::string::npos) env.emplace_back("KOLO_GLOO_IFACE", first);
  }
  for (const auto& kv : options.settings) env.push_back(kv);
  for (const LaunchOptions::EnvVar& v : options.env) {
    if (v.has_value) env.emplace_back(v.name, v.value);
  }
  return env;
}

std::string shell_quote(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") ==
                           std::string::npos) {
    return word;
  }
  std::string q = "'";
  for (char c : word) {
    if (c == '\'') {
      q += "'\\''";
    } else {
      q += c;
    }
  }
  return q + "'";
}

std::vector<std::string> remote_rank_argv(const LaunchOptions& options, const std::string& host, const std::string& dir,
                                          const std::vector<std::string>& command) {
  std::vector<std::string> argv;
  if (!options.rsh_agent.empty()) {
    std::vector<std::string> words;
    std::string error;
    if (!split_shell_words(options.rsh_agent, &words, &error)) words = {options.rsh_agent};
    argv = words;
  } else {
    argv = {"ssh", "-o", "BatchMode=yes"};
  }
  for (const std::string& a : options.ssh_args()) argv.push_back(a);
  argv.push_back(host);
  std::string remote = "cd " + shell_quote(dir) + " && exec /bin/sh -c " +
                       shell_quote("while IFS= read -r kv && [ -n \"$kv\" ]; do export \"$kv\"; done; exec \"$@\"") +
                       " kolo-rank";
  for (const std::string& word : command) remote += " " + shell_quote(word);
  argv.push_back(remote);
  return argv;
}

}  // namespace launcher
}  // namespace kolo
