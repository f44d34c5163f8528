// A Group (comm/group.h) of some of a Gloo mesh's ranks (gloo_mesh.h): an instance's negotiation, data, host
// or cross-host group, a process set's, the job's for agreements. Its messages go on slots of its own id
// (the id in the high bits, the tag in the low 16), so that groups sharing the mesh's connections never
// match each other's. Its collectives are kolo's own (comm/host/group_collectives.cc). A wait sleeps until
// Gloo's I/O thread has the data: the pace is Gloo's, not kolo's spin-yield-nap (there is nothing to poll).
#pragma once

#include <memory>
#include <vector>

#include "comm/gloo/gloo_mesh.h"
#include "comm/group.h"

namespace kolo {

class GlooGroup : public Group {
 public:
  // `members`: the mesh's ranks in the group's order (this rank among them); `id` < 0xffff, the same on
  // every member and on no other group of the mesh.
  GlooGroup(std::shared_ptr<GlooMesh> mesh, std::vector<int> members, int id);

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  Status post_send(int peer, int tag, const char* data, size_t bytes, const char* what,
                   std::unique_ptr<Transfer>* out) override;
  Status post_receive(int peer, int tag, char* data, size_t bytes, const char* what,
                      std::unique_ptr<Transfer>* out) override;

 private:
  Status post(bool send, int peer, int tag, char* data, size_t bytes, const char* what, std::unique_ptr<Transfer>* out);
  std::shared_ptr<GlooMesh> mesh_;
  std::vector<int> members_;
  uint64_t id_;
  int rank_ = -1;
};

}  // namespace kolo
