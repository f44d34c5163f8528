#include "elastic_hosts.h"

#include <algorithm>

#include "host_discovery.h"
#include "launcher_messages.h"
#include "mpirun_command.h"
#include "stop_signals.h"

namespace kolo {
namespace launcher {
namespace {

void drop_left_out(HostState* s) {
  std::vector<Host> kept;
  for (const Host& h : s->hosts) {
    if (!s->left_out.count(h.name)) kept.push_back(h);
  }
  s->hosts = kept;
}

}  // namespace

std::string hosts_text(const std::vector<Host>& hosts) { return hosts.empty() ? "none" : host_list_text(hosts); }

void count_failures(const LaunchOptions& o, const std::set<std::string>& blamed, HostState* s) {
  for (const std::string& host : blamed) {
    const int n = ++s->failures[host];
    if (o.blacklist_after > 0 && n >= o.blacklist_after && s->left_out.insert(host).second) {
      say() << "host " << host << " failed " << n << " times (--blacklist-after " << o.blacklist_after
            << "); leaving it out of the job\n";
    }
  }
  drop_left_out(s);
}

void rediscover(const LaunchOptions& o, HostState* s) {
  if (o.discovery_script.empty()) return;
  std::string error;
  if (discover_hosts(o.discovery_script, &s->hosts, &error)) {
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
