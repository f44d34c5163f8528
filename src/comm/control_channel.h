// The three collectives negotiation needs, behind an interface: MPI in production
// (comm/mpi/mpi_control_channel), threads-as-ranks in the unit tests (tests/cpp/unit/fake_channel.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kolo/status.h"

namespace kolo {

class ControlChannel {
 public:
  virtual ~ControlChannel() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Bitwise AND of `words` across ranks, in place. Every rank passes the same number of words.
  virtual Status allreduce_and(std::vector<uint64_t>* words) = 0;
  // The same, with `rider` (the same size on every rank) reduced in the same collective: ranks' riders
  // meet as combine(from, into, bytes), in any order, so combine must not depend on it.
  using RiderCombine = void (*)(const void* from, void* into, size_t bytes);
  virtual Status allreduce_and(std::vector<uint64_t>* words, std::string* rider, RiderCombine combine) = 0;
  // Rank 0 receives every rank's bytes, indexed by rank; on other ranks `all` is left empty.
  virtual Status gather(const std::string& mine, std::vector<std::string>* all) = 0;
  // Rank 0's `bytes` replace every other rank's.
  virtual Status broadcast(std::string* bytes) = 0;
};

}  // namespace kolo
