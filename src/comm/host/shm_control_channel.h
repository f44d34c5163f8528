// Negotiation where every rank is on one host: the bit-vector AND (and its rider) through the host's
// shared memory (comm/shm/shm_group.h), one round of flags instead of log2(n) MPI exchanges; the gather
// and broadcast, rare once responses are cached, and an AND too large for one round, over the
// negotiation's group. The
// group is the collectives' too: negotiation and collectives run in turn under the engine's cycle
// lock, in the same order on every rank, so their rounds agree.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "comm/host/group_control_channel.h"
#include "comm/shm/shm_group.h"

namespace kolo {

class ShmControlChannel : public ControlChannel {
 public:
  ShmControlChannel(ShmGroup* group, std::unique_ptr<GroupControlChannel> over_group)
      : group_(group), over_group_(std::move(over_group)) {}
  int rank() const override { return over_group_->rank(); }
  int size() const override { return over_group_->size(); }
  Status allreduce_and(std::vector<uint64_t>* words) override;
  Status allreduce_and(std::vector<uint64_t>* words, std::string* rider, RiderCombine combine) override;
  Status gather(const std::string& mine, std::vector<std::string>* all) override { return over_group_->gather(mine, all); }
  Status broadcast(std::string* bytes) override { return over_group_->broadcast(bytes); }

 private:
  ShmGroup* group_;
  std::unique_ptr<GroupControlChannel> over_group_;
  std::vector<char> block_, result_;  // the words, then the rider; kept between cycles
};

}  // namespace kolo
