// Negotiation over MPI: nonblocking collectives on kolo's control communicator, waited on
// politely (mpi_wait) so idle cycles do not burn a core.
#pragma once

#include <mpi.h>

#include <map>
#include <string>
#include <vector>

#include "comm/control_channel.h"

namespace kolo {

class MpiControlChannel : public ControlChannel {
 public:
  explicit MpiControlChannel(MPI_Comm comm);
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  ~MpiControlChannel() override;
  Status allreduce_and(std::vector<uint64_t>* words) override;
  Status allreduce_and(std::vector<uint64_t>* words, std::string* rider, RiderCombine combine) override;
  Status gather(const std::string& mine, std::vector<std::string>* all) override;
  Status broadcast(std::string* bytes) override;

 private:
  MPI_Comm comm_;
  std::map<size_t, MPI_Datatype> blocks_;  // one element of the words and rider, by its bytes
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace kolo
