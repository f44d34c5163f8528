#include "comm/gloo/gloo_context.h"

#include <algorithm>

#include "comm/give_up.h"
#include "comm/peer_failure.h"

namespace kolo {
namespace {

// How the host's shared-memory waits end when a Gloo job loses a peer: the peer watch's give-up, a failure
// reported in place, a host peer seen ending. Nothing to keep moving: Gloo's I/O thread moves its messages.
class GlooShmWaitPolicy : public ShmWaitPolicy {
 public:
  explicit GlooShmWaitPolicy(std::vector<std::string> names) : names_(std::move(names)) {}
  Status interrupted() override {
    Status s = waits_given_up("shared-memory collective");
    if (!s.ok()) return s;
    if (peer_failure_pending()) {
      return Status::PeersFailed(std::string("shared-memory collective ended: a peer failed (") + kPeersFailedWords + ")");
    }
    return Status::OK();
  }
  Status peer_ended(int peer, pid_t pid) override {
    const std::string what = "shared-memory collective: " + names_[static_cast<size_t>(peer)] + " (pid " +
                             std::to_string(pid) + ", on this host) ended in the middle of it";
    if (surviving_peer_failures()) {
      report_peer_failure(what);
      return Status::PeersFailed(what + " (" + kPeersFailedWords + ")");
    }
    const Status lost = Status::Aborted(what + "; the job must end");
    give_up_waits(lost.message());
    return lost;
  }

 private:
  std::vector<std::string> names_;
};

}  // namespace

GlooContext::GlooContext(std::shared_ptr<GlooMesh> mesh, const std::vector<int>& members,
                         const std::vector<std::string>& hosts, int first_id) {
  std::vector<std::string> keys;
  for (int m : members) keys.push_back(hosts[static_cast<size_t>(m)]);
  topology_.rank = static_cast<int>(std::find(members.begin(), members.end(), mesh->rank()) - members.begin());
  place(keys);
  auto mesh_ranks = [&](const std::vector<int>& ranks) {
    std::vector<int> out;
    for (int r : ranks) out.push_back(members[static_cast<size_t>(r)]);
    return out;
  };
  std::vector<int> cross;
  for (const auto& host : host_members_) {
    if (static_cast<int>(host.size()) > topology_.local_rank) cross.push_back(host[static_cast<size_t>(topology_.local_rank)]);
  }
  control_ = std::make_unique<GlooGroup>(mesh, members, first_id);
  data_ = std::make_unique<GlooGroup>(mesh, members, first_id + 1);
  local_ = std::make_unique<GlooGroup>(mesh, mesh_ranks(host_members_[static_cast<size_t>(topology_.cross_rank)]),
                                       first_id + 2);
  cross_ = std::make_unique<GlooGroup>(mesh, mesh_ranks(cross), first_id + 3);
}

std::unique_ptr<ShmWaitPolicy> GlooContext::shm_wait_policy(std::vector<std::string> names) const {
  return std::make_unique<GlooShmWaitPolicy>(std::move(names));
}

}  // namespace kolo
