// A Group (comm/group.h) over one of kolo's own MPI communicators, which it owns: point-to-point messages
// as nonblocking MPI calls waited on politely (mpi_wait: the waits leave the core to the framework's
// threads and give up on a lost peer), and the collectives as MPI's own. With a bell (the negotiation's,
// across hosts: comm/mpi/mpi_peer_bell.h), its waits sleep until the peer they wait for rings, and each
// step rings the peer it sends to where that peer sleeps waiting for it.
#pragma once

#include <mpi.h>

#include <memory>

#include "comm/group.h"
#include "comm/mpi/mpi_reductions.h"
#include "comm/peer_bell.h"

namespace kolo {

class MpiGroup : public Group {
 public:
  // Takes `comm` (tracked for ULFM's revocation; freed with the group unless revoked). `reductions`
  // outlives the group.
  MpiGroup(MPI_Comm comm, const MpiReductions* reductions);
  ~MpiGroup() override;
  MpiGroup(const MpiGroup&) = delete;
  MpiGroup& operator=(const MpiGroup&) = delete;

  MPI_Comm comm() const { return comm_; }
  void set_bell(std::unique_ptr<PeerBell> bell) { bell_ = std::move(bell); }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status post_send(int peer, int tag, const char* data, size_t bytes, const char* what,
                   std::unique_ptr<Transfer>* out) override;
  Status post_receive(int peer, int tag, char* data, size_t bytes, const char* what,
                      std::unique_ptr<Transfer>* out) override;
  Status send(int peer, int tag, const char* data, size_t bytes, const char* what, WaitPace pace) override;
  Status receive(int peer, int tag, char* data, size_t bytes, const char* what, WaitPace pace) override;
  Status exchange(int left, int right, int tag, const char* out, size_t out_bytes, char* in, size_t in_bytes,
                  const char* what, WaitPace pace) override;

  Status allreduce(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op, const char* what) override;
  Status allgatherv(const void* in, void* out, const std::vector<int64_t>& rows, int64_t row_bytes,
                    const char* what) override;
  Status broadcast(void* data, int64_t bytes, int root, const char* what, WaitPace pace) override;
  Status alltoallv(const void* in, const std::vector<int64_t>& send_rows, void* out,
                   const std::vector<int64_t>& recv_rows, int64_t row_bytes, const char* what) override;
  Status reduce_scatter(const void* in, void* out, const std::vector<int64_t>& counts, DataType dtype, ReduceOp op,
                        const char* what) override;
  Status gather(const std::string& mine, std::vector<std::string>* all, const char* what) override;
  const void* native_handle() const override { return &comm_; }

 private:
  MPI_Comm comm_;
  const MpiReductions* reductions_;
  std::unique_ptr<PeerBell> bell_;
  int rank_ = 0, size_ = 1;
};

}  // namespace kolo
