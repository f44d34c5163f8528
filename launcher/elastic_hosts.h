// An elastic job's hosts, from attempt to attempt: the given ones or the discovery script's last good
// answer, less those blamed for failing too often (--blacklist-after), for good or for a cooldown
// (--blacklist-cooldown-range).
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
  std::map<std::string, int> failures;  // attempts that failed blaming each host (since it came back)
  // Blamed --blacklist-after times: left out until this time (now(); infinity: for good).
  std::map<std::string, double> left_out;
  std::map<std::string, int> times_left_out;
};

// How long a host is left out the `times`th time (1, 2, ...), as horovodrun's cooldown: LOW x 2^times,
// plus LOW x `jitter` (from [0, 1)), within [LOW, HIGH].
double cooldown_seconds(double low, double high, int times, double jitter);

// "a:2,b:1", or "none", for messages.
std::string hosts_text(const std::vector<Host>& hosts);

// A failed attempt blamed these hosts (Open MPI's or kolo's own words); one that reaches
// --blacklist-after failures is left out from now on.
void count_failures(const LaunchOptions& o, const std::set<std::string>& blamed, HostState* s);

// The given hosts again, or the discovery script's answer (when it fails, the last hosts, warning
// once); less those left out, but for those whose cooldown has ended.
void rediscover(const LaunchOptions& o, HostState* s);

// Until the hosts have `min_np` slots, runs the script again each interval. False when
// --elastic-timeout passes first (saying so) or a stop signal comes.
bool wait_for_slots(const LaunchOptions& o, int min_np, HostState* s);

}  // namespace launcher
}  // namespace kolo
