// An instance's Context (comm/context.h) in the Gloo world: groups of the mesh's ranks (gloo_group.h) for
// negotiation, data, this host and across hosts, each on ids of its own. A host is a host name: ranks
// whose hosts have one name share a host, and its shared memory.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "comm/context.h"
#include "comm/gloo/gloo_group.h"

namespace kolo {

class GlooContext : public Context {
 public:
  // Over the mesh's ranks `members` (mesh ranks, ascending; this rank among them), whose hosts are
  // `hosts` (by mesh rank). Takes ids first_id .. first_id + 3.
  GlooContext(std::shared_ptr<GlooMesh> mesh, const std::vector<int>& members, const std::vector<std::string>& hosts,
              int first_id);
  static constexpr int kIds = 4;

  Group& control() const override { return *control_; }
  Group& data() const override { return *data_; }
  Group& local() const override { return *local_; }
  Group& cross() const override { return *cross_; }
  const char* transport() const override { return "GLOO"; }

 protected:
  std::unique_ptr<ShmWaitPolicy> shm_wait_policy(std::vector<std::string> names) const override;

 private:
  std::unique_ptr<GlooGroup> control_, data_, local_, cross_;
};

}  // namespace kolo
