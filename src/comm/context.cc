#include "comm/context.h"

#include <algorithm>
#include <map>

#include "common/logging.h"

namespace kolo {

Context::~Context() = default;

JobShape Context::job_shape() const {
  JobShape job = kolo::job_shape(topology_, threads_multiple_);
  job.host_shm = host_shm_ != nullptr;
  return job;
}

void Context::place(const std::vector<std::string>& host_keys) {
  Topology& t = topology_;
  t.size = static_cast<int>(host_keys.size());
  // Hosts are named by their lowest rank; a host's index is its place among those.
  std::map<std::string, int> first_rank;
  for (int r = 0; r < t.size; ++r) first_rank.emplace(host_keys[static_cast<size_t>(r)], r);
  std::vector<int> hosts;
  for (const auto& kv : first_rank) hosts.push_back(kv.second);
  std::sort(hosts.begin(), hosts.end());
  host_members_.assign(hosts.size(), {});
  for (int r = 0; r < t.size; ++r) {
    const int root = first_rank[host_keys[static_cast<size_t>(r)]];
    const size_t h = static_cast<size_t>(std::lower_bound(hosts.begin(), hosts.end(), root) - hosts.begin());
    host_members_[h].push_back(r);
  }
  t.cross_size = static_cast<int>(hosts.size());
  const int mine = first_rank[host_keys[static_cast<size_t>(t.rank)]];
  t.cross_rank = static_cast<int>(std::lower_bound(hosts.begin(), hosts.end(), mine) - hosts.begin());
  const std::vector<int>& here = host_members_[static_cast<size_t>(t.cross_rank)];
  t.local_size = static_cast<int>(here.size());
  t.local_rank = static_cast<int>(std::find(here.begin(), here.end(), t.rank) - here.begin());
  t.homogeneous = std::all_of(host_members_.begin(), host_members_.end(),
                              [&](const std::vector<int>& m) { return m.size() == host_members_[0].size(); });
}

void Context::open_host_shm(const HostShmOptions& options) {
  // Messages name ranks as the job knows them (a process set's members by their job rank).
  std::vector<std::string> names;
  for (int r : host_members_[static_cast<size_t>(topology_.cross_rank)]) names.push_back("rank " + std::to_string(job_rank(r)));
  std::string why_not;
  host_shm_ = HostShm::open(local(), options, shm_wait_policy(std::move(names)), &why_not);
  if (host_shm_ && topology_.local_rank == 0) {
    KOLO_LOG(kDebug, "shared memory among this host's " << topology_.local_size << " ranks: "
                                                       << host_shm_->group().segment().bytes() << " bytes");
  }
  // Turned off, or alone on its host: nothing to say.
  if (!host_shm_ && options.enabled && topology_.local_size > 1 && topology_.local_rank == 0) {
    KOLO_LOG(kWarning, "no shared memory among this host's " << topology_.local_size << " ranks (" << why_not
                                                             << "; KOLO_SHARED_MEMORY_DIR): CPU collectives "
                                                                "inside the host go through "
                                                             << transport());
  }
}

}  // namespace kolo
