// The ranks of one of kolo's communicators (an instance's negotiation or data, its host's ranks, the
// ranks of one local rank across hosts, the job's for agreements) and what kolo's CPU algorithms need of
// them: point-to-point messages, and a few collectives. The seam between those algorithms (comm/host/)
// and a world's transport: MPI's communicators (comm/mpi/mpi_group.h) or Gloo's pairs (comm/gloo/).
// Every wait gives up on a lost peer (comm/give_up.h) or, in place, on a reported failure
// (comm/peer_failure.h).
//
// The collectives each have kolo's own implementation over the point-to-point messages
// (comm/host/group_collectives.cc); MPI's group runs MPI's own instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/wait_pace.h"
#include "kolo/status.h"
#include "kolo/types.h"

namespace kolo {

class Group {
 public:
  virtual ~Group() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // A transfer posted and not yet finished.
  class Transfer {
   public:
    virtual ~Transfer() = default;
    virtual Status wait(WaitPace pace) = 0;
    // After an error elsewhere: nothing may write into (or read from) the transfer's memory once this
    // returns.
    virtual void cancel() = 0;
  };
  // Messages match by peer and tag, in order; `tag` < 2^16. A message's bytes fit an int.
  virtual Status post_send(int peer, int tag, const char* data, size_t bytes, const char* what,
                           std::unique_ptr<Transfer>* out) = 0;
  virtual Status post_receive(int peer, int tag, char* data, size_t bytes, const char* what,
                              std::unique_ptr<Transfer>* out) = 0;

  // Blocking steps over the above.
  virtual Status send(int peer, int tag, const char* data, size_t bytes, const char* what,
                      WaitPace pace = WaitPace::kControl);
  virtual Status receive(int peer, int tag, char* data, size_t bytes, const char* what,
                         WaitPace pace = WaitPace::kControl);
  // Sends `out` to `right` while receiving `in` from `left` (left == right: a pairwise exchange).
  virtual Status exchange(int left, int right, int tag, const char* out, size_t out_bytes, char* in, size_t in_bytes,
                          const char* what, WaitPace pace = WaitPace::kControl);

  // `count` elements from `send` (null: in place) reduced over the group into `recv`, the same bits
  // everywhere.
  virtual Status allreduce(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op,
                           const char* what);
  // rows[r] rows of `row_bytes` from rank r, in rank order, into `out`; `in` may be out's own block.
  virtual Status allgatherv(const void* in, void* out, const std::vector<int64_t>& rows, int64_t row_bytes,
                            const char* what);
  // `bytes` from `root`. kControl: waits that yield and nap, as negotiation's; kTransfer: a large
  // transfer every rank has started.
  virtual Status broadcast(void* data, int64_t bytes, int root, const char* what, WaitPace pace = WaitPace::kTransfer);
  // send_rows[r] rows to rank r, recv_rows[r] rows from it, each block in rank order.
  virtual Status alltoallv(const void* in, const std::vector<int64_t>& send_rows, void* out,
                           const std::vector<int64_t>& recv_rows, int64_t row_bytes, const char* what);
  // Reduces `in` (counts[r] elements for rank r, in rank order) over the group; this rank's block to `out`.
  virtual Status reduce_scatter(const void* in, void* out, const std::vector<int64_t>& counts, DataType dtype,
                                ReduceOp op, const char* what);
  // Rank 0 gets every rank's bytes, by rank; on the others `all` is left empty. Negotiation's: waits yield.
  virtual Status gather(const std::string& mine, std::vector<std::string>* all, const char* what);

  // Every rank's bytes, by rank (sizes may differ): agreements, outside the data path.
  Status allgather(const std::string& mine, std::vector<std::string>* all, const char* what);
  // Whether `ok` holds on every rank, the same answer everywhere.
  Status all_true(bool ok, bool* all, const char* what);

  // For a transport's own users (the tests' GPU double runs its communicators over MPI's): the MPI_Comm
  // behind the group, or null.
  virtual const void* native_handle() const { return nullptr; }
};

}  // namespace kolo
