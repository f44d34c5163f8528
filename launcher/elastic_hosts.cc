#include "elastic_hosts.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "host_discovery.h"
#include "launcher_messages.h"
#include "mpirun_command.h"
#include "stop_signals.h"

namespace kolo {
namespace launcher {
namespace {

void drop_left_out(HostState* s) {
  const double t = now();
  for (auto it = s->left_out.begin(); it != s->left_out.end();) {
    if (it->second > t) {
      ++it;
      continue;
    }
    say() << "host " << it->first << "'s cooldown has ended; it may join the job again\n";
    s->failures.erase(it->first);
    it = s->left_out.erase(it);
  }
  std::vector<Host> kept;
  for (const Host& h : s->hosts) {
    if (!s->left_out.count(h.name)) kept.push_back(h);
  }
  s->hosts = kept;
}

}  // namespace

double cooldown_seconds(double low, double high, int times, double jitter) {
  const double delay = low * std::pow(2.0, std::min(times, 30)) + jitter * low;
  return std::max(low, std::min(high, delay));
}

std::string hosts_text(const std::vector<Host>& hosts) { return hosts.empty() ? "none" : host_list_text(hosts); }

void count_failures(const LaunchOptions& o, const std::set<std::string>& blamed, HostState* s) {
  for (const std::string& host : blamed) {
    const int n = ++s->failures[host];
    if (o.blacklist_after <= 0 || n < o.blacklist_after || s->left_out.count(host)) continue;
    double until = std::numeric_limits<double>::infinity();
    std::string how_long;
    if (o.cooldown_low_seconds > 0) {
      static std::mt19937 random_bits(std::random_device{}());
      const double jitter = std::uniform_real_distribution<double>(0.0, 1.0)(random_bits);
      const double wait =
          cooldown_seconds(o.cooldown_low_seconds, o.cooldown_high_seconds, ++s->times_left_out[host], jitter);
      how_long = " for " + std::to_string(static_cast<int>(wait)) + " s (--blacklist-cooldown-range)";
      until = now() + wait;
    }
    say() << "host " << host << " failed " << n << " times (--blacklist-after " << o.blacklist_after
          << "); leaving it out of the job" << how_long << "\n";
    s->left_out[host] = until;
  }
  drop_left_out(s);
}

void rediscover(const LaunchOptions& o, HostState* s) {
  if (o.discovery_script.empty()) {
    s->hosts = effective_hosts(o);
    drop_left_out(s);
    return;
  }
  std::string error;
  if (discover_hosts(o.discovery_script, &s->hosts, &error, o.slots_per_host)) {
    s->warned.clear();
    drop_left_out(s);
  } else if (error != s->warned) {
    say() << "warning: " << error << "; keeping the last hosts (" << hosts_text(s->hosts) << ")\n";
    s->warned = error;
  }
}

bool wait_for_slots(const LaunchOptions& o, int min_np, HostState* s) {
  const double since = now();
  while (total_slots(s->hosts) < min_np) {
    const double left = o.elastic_timeout_seconds - (now() - since);
    if (left <= 0) {
      say() << "fewer than --min-np " << min_np << " slots (have " << total_slots(s->hosts) << ": "
            << hosts_text(s->hosts) << ") for " << o.elastic_timeout_seconds << " s; ending the job\n";
      return false;
    }
    if (!pause_for(std::min(left, o.discovery_interval_seconds))) return false;
    rediscover(o, s);
  }
  return true;
}

}  // namespace launcher
}  // namespace kolo
