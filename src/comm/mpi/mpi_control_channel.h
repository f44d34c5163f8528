// Negotiation over MPI on kolo's control communicator: the bit-vector AND by recursive doubling over
// point-to-point messages (recursive_doubling.h), the gather and broadcast as nonblocking collectives;
// all waited on politely (mpi_wait) so idle cycles do not burn a core, and given up on a lost peer. With
// a bell (comm/mpi/mpi_peer_bell.h; a job across hosts), the AND's waits sleep until the peer they wait
// for rings, so that a late rank is seen when it comes, not when a nap ends.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "comm/control_channel.h"
#include "comm/peer_bell.h"

namespace kolo {

// A block of 64-bit words ANDed into another (`bytes` a multiple of 8): the negotiation's reduction.
void and_words(const char* from, char* into, size_t bytes);

class MpiControlChannel : public ControlChannel {
 public:
  explicit MpiControlChannel(MPI_Comm comm, std::unique_ptr<PeerBell> bell = nullptr);
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status allreduce_and(std::vector<uint64_t>* words) override;
  Status allreduce_and(std::vector<uint64_t>* words, std::string* rider, RiderCombine combine) override;
  Status gather(const std::string& mine, std::vector<std::string>* all) override;
  Status broadcast(std::string* bytes) override;

 private:
  MPI_Comm comm_;
  std::unique_ptr<PeerBell> bell_;
  std::vector<char> block_, scratch_;  // the AND's, kept between cycles
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace kolo
