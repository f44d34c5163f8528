// Negotiation over an instance's negotiation group (comm/group.h): the bit-vector AND by recursive
// doubling over point-to-point messages (recursive_doubling.h), the gather and broadcast as the group's;
// all waited on politely so idle cycles do not burn a core, and given up on a lost peer. Under MPI across
// hosts the group has a bell (comm/mpi/mpi_peer_bell.h): the AND's waits sleep until the peer they wait
// for rings, so that a late rank is seen when it comes, not when a nap ends.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "comm/control_channel.h"
#include "comm/group.h"

namespace kolo {

// A block of 64-bit words ANDed into another (`bytes` a multiple of 8): the negotiation's reduction.
void and_words(const char* from, char* into, size_t bytes);

class GroupControlChannel : public ControlChannel {
 public:
  explicit GroupControlChannel(Group& group) : group_(group) {}
  int rank() const override { return group_.rank(); }
  int size() const override { return group_.size(); }
  Status allreduce_and(std::vector<uint64_t>* words) override;
  Status allreduce_and(std::vector<uint64_t>* words, std::string* rider, RiderCombine combine) override;
  Status gather(const std::string& mine, std::vector<std::string>* all) override;
  Status broadcast(std::string* bytes) override;

 private:
  Group& group_;
  std::vector<char> block_, scratch_;  // the AND's, kept between cycles
};

}  // namespace kolo
