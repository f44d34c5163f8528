// An elastic job's hosts, from attempt to attempt: the given ones or the discovery script's last good
// answer, less those blamed for failing too often (--blacklist-after).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "launch_options.h"

namespace kolo {
namespace launcher {

// The hosts to run on: the given ones, or the discovery script's last good answer, less those left out.
struct HostState {
  std::vector<Host> hosts;
  std::string warned;  // the script's problem, printed once until it works again
  std::map<std::string, int> failures;  // attempts that failed blaming each host
  std::set<std::string> left_out;       // blamed --blacklist-after times: not used again
};

// "a:2,b:1", or "none", for messages.
std::string hosts_text(const std::vector<Host>& hosts);

// A failed attempt blamed these hosts (Open MPI's or kolo's own words); one that reaches
// --blacklist-after failures is left out from now on.
void count_failures(const LaunchOptions& o, const std::set<std::string>& blamed, HostState* s);

// Runs the discovery script, if there is one; when it fails, keeps the last hosts (warning once).
void rediscover(const LaunchOptions& o, HostState* s);

// Until the hosts have `min_np` slots, runs the script again each interval. False when
// --elastic-timeout passes first (saying so) or a stop signal comes.
bool wait_for_slots(const LaunchOptions& o, int min_np, HostState* s);

}  // namespace launcher
}  // namespace kolo
