// Negotiation over MPI: nonblocking collectives on kolo's control communicator, waited on
// politely (mpi_wait) so idle cycles do not burn a core.
#pragma once

#include <mpi.h>

#include "comm/control_channel.h"

namespace kolo {

class MpiControlChannel : public ControlChannel {
 public:
  explicit MpiControlChannel(MPI_Comm comm);
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status allreduce_and(std::vector<uint64_t>* words) override;
  Status gather(const std::string& mine, std::vector<std::string>* all) override;
  Status broadcast(std::string* bytes) override;

 private:
  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace kolo
