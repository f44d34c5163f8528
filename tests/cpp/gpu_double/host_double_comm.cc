// The host double's NCCL part: communicators over MPI (a copy of the members' communicator), driven
// with nonblocking MPI on the stream's worker, and shrunk with ULFM. Streams, events and memory (the
// CUDA runtime's part) are in host_double_runtime.cc.
#include "gpu_double/host_double.h"

#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // ULFM, for shrink()
#endif
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/mpi/mpi_fault.h"
#include "comm/peer_failure.h"
#include "comm/mpi/mpi_types.h"

namespace kolo {
namespace testing {
namespace {

std::string mpi_error(int rc) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return std::string(text, static_cast<size_t>(len));
}

Status mpi_op(DataType dtype, ReduceOp op, MPI_Op* out) {
  if (op == ReduceOp::kAverage) return Status::InvalidArgument("host double: communicators take no Average");
  if (dtype != DataType::kFloat16 && dtype != DataType::kBFloat16) {
    *out = mpi_builtin_op(op);
    return Status::OK();
  }
  // kolo's ops for 16-bit floats, made once per process (never freed: they are a few bytes).
  static std::once_flag once;
  static MPI_Op ops[2][kNumReduceOps];
  static Status made;
  std::call_once(once, [] {
    made = create_16bit_ops(DataType::kFloat16, ops[0]);
    if (made.ok()) made = create_16bit_ops(DataType::kBFloat16, ops[1]);
  });
  *out = ops[dtype == DataType::kFloat16 ? 0 : 1][static_cast<int>(op)];
  return made;
}

#if defined(MPIX_ERR_PROC_FAILED)
// The ranks of `comm` that are not in `survivors` (ascending).
std::vector<int> lost_members(MPI_Comm comm, MPI_Comm survivors) {
  MPI_Group from = MPI_GROUP_NULL, to = MPI_GROUP_NULL;
  MPI_Comm_group(comm, &from);
  MPI_Comm_group(survivors, &to);
  int n = 0;
  MPI_Group_size(from, &n);
  std::vector<int> ranks(static_cast<size_t>(n)), there(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) ranks[static_cast<size_t>(i)] = i;
  MPI_Group_translate_ranks(from, n, ranks.data(), to, there.data());
  MPI_Group_free(&from);
  MPI_Group_free(&to);
  std::vector<int> lost;
  for (int i = 0; i < n; ++i) {
    if (there[static_cast<size_t>(i)] == MPI_UNDEFINED) lost.push_back(i);
  }
  return lost;
}
#endif

Status int_count(int64_t n, const char* what) {
  if (n > 0x7fffffff) return Status::Unsupported(std::string("host double: ") + what + " of more than 2^31 elements");
  return Status::OK();
}

// Starts MPI requests for one call; `keep` holds memory the requests use until they are done.
using Starter = std::function<int(std::vector<MPI_Request>* requests, std::vector<std::shared_ptr<void>>* keep)>;

class DoubleComm : public DeviceComm {
 public:
  DoubleComm(HostDouble* device, MPI_Comm comm) : device_(device), comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  }
  ~DoubleComm() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }
  int size() const override { return size_; }
  int rank() const override { return rank_; }

  Status allreduce(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op,
                   DeviceStream stream) override {
    const int64_t bytes = count * static_cast<int64_t>(dtype_size(dtype));
    MPI_Op mop;
    Status s = check(send, bytes, "allreduce's send buffer");
    if (s.ok()) s = check(recv, bytes, "allreduce's receive buffer");
    if (s.ok()) s = int_count(count, "an allreduce");
    if (s.ok()) s = mpi_op(dtype, op, &mop);
    if (!s.ok()) return s;
    const MPI_Comm c = comm_;
    return submit(stream, [=](std::vector<MPI_Request>* r, std::vector<std::shared_ptr<void>>*) {
      r->emplace_back();
      return MPI_Iallreduce(send == recv ? MPI_IN_PLACE : send, recv, static_cast<int>(count), mpi_datatype(dtype), mop, c,
                            &r->back());
    });
  }

  Status reducescatter(const void* send, void* recv, int64_t recv_count, DataType dtype, ReduceOp op,
                       DeviceStream stream) override {
    const int64_t elem = static_cast<int64_t>(dtype_size(dtype));
    MPI_Op mop;
    Status s = check(send, recv_count * size_ * elem, "reducescatter's send buffer");
    if (s.ok()) s = check(recv, recv_count * elem, "reducescatter's receive buffer");
    if (s.ok()) s = int_count(recv_count, "a reducescatter");
    if (s.ok()) s = mpi_op(dtype, op, &mop);
    if (!s.ok()) return s;
    const MPI_Comm c = comm_;
    const int64_t send_bytes = recv_count * size_ * elem;
    return submit(stream, [=](std::vector<MPI_Request>* r, std::vector<std::shared_ptr<void>>* keep) {
      // NCCL allows recv inside send (in place); MPI does not: reduce from a copy.
      std::shared_ptr<void> copy(std::malloc(static_cast<size_t>(send_bytes) + 1), std::free);
      std::memcpy(copy.get(), send, static_cast<size_t>(send_bytes));
      keep->push_back(copy);
      r->emplace_back();
      return MPI_Ireduce_scatter_block(copy.get(), recv, static_cast<int>(recv_count), mpi_datatype(dtype), mop, c,
                                       &r->back());
    });
  }

  Status allgather(const void* send, void* recv, int64_t send_count, DataType dtype, DeviceStream stream) override {
    const int64_t elem = static_cast<int64_t>(dtype_size(dtype));
    Status s = check(send, send_count * elem, "allgather's send buffer");
    if (s.ok()) s = check(recv, send_count * size_ * elem, "allgather's receive buffer");
    if (s.ok()) s = int_count(send_count * size_, "an allgather");
    if (!s.ok()) return s;
    const MPI_Comm c = comm_;
    const bool in_place = send == static_cast<const char*>(recv) + rank_ * send_count * elem;
    return submit(stream, [=](std::vector<MPI_Request>* r, std::vector<std::shared_ptr<void>>*) {
      r->emplace_back();
      return MPI_Iallgather(in_place ? MPI_IN_PLACE : send, static_cast<int>(send_count), mpi_datatype(dtype), recv,
                            static_cast<int>(send_count), mpi_datatype(dtype), c, &r->back());
    });
  }

  Status broadcast(const void* send, void* recv, int64_t count, DataType dtype, int root, DeviceStream stream) override {
    const int64_t bytes = count * static_cast<int64_t>(dtype_size(dtype));
    Status s = check(recv, bytes, "broadcast's receive buffer");
    if (s.ok() && rank_ == root) s = check(send, bytes, "broadcast's send buffer");
    if (s.ok()) s = int_count(count, "a broadcast");
    if (!s.ok()) return s;
    const MPI_Comm c = comm_;
    const int me = rank_;
    return submit(stream, [=](std::vector<MPI_Request>* r, std::vector<std::shared_ptr<void>>*) {
      if (me == root && send != recv) std::memcpy(recv, send, static_cast<size_t>(bytes));
      r->emplace_back();
      return MPI_Ibcast(recv, static_cast<int>(count), mpi_datatype(dtype), root, c, &r->back());
    });
  }

  Status send(const void* data, int64_t bytes, int peer, DeviceStream stream) override {
    Status s = check(data, bytes, "send's buffer");
    if (s.ok()) s = int_count(bytes, "a send");
    if (!s.ok()) return s;
    const MPI_Comm c = comm_;
    return submit(stream, [=](std::vector<MPI_Request>* r, std::vector<std::shared_ptr<void>>*) {
      r->emplace_back();
      return MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, peer, 0, c, &r->back());
    });
  }

  Status recv(void* data, int64_t bytes, int peer, DeviceStream stream) override {
    Status s = check(data, bytes, "recv's buffer");
    if (s.ok()) s = int_count(bytes, "a recv");
    if (!s.ok()) return s;
    const MPI_Comm c = comm_;
    return submit(stream, [=](std::vector<MPI_Request>* r, std::vector<std::shared_ptr<void>>*) {
      r->emplace_back();
      return MPI_Irecv(data, static_cast<int>(bytes), MPI_BYTE, peer, 0, c, &r->back());
    });
  }

  Status group_start() override {
    if (in_group_) return Status::InvalidArgument("host double: group_start inside a group");
    in_group_ = true;
    return Status::OK();
  }

  Status group_end() override {
    if (!in_group_) return Status::InvalidArgument("host double: group_end without group_start");
    in_group_ = false;
    std::vector<Starter> starters;
    starters.swap(group_);
    if (starters.empty()) return Status::OK();
    return launch(group_stream_, std::move(starters));
  }

  Status async_error() override {
    std::lock_guard<std::mutex> lock(state_->mu);
    return state_->error;
  }

  void abort() override {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->aborted = true;
    if (state_->error.ok()) state_->error = Status::Aborted("the communicator was aborted");
  }

  // ULFM's revoke and shrink, as NCCL_SHRINK_ABORT: the stream's work here is abandoned, the members
  // agree who is left. What NCCL takes on trust, the double checks: `excluded` must be exactly the
  // members lost.
  Status shrink(const std::vector<int>& excluded, std::unique_ptr<DeviceComm>* out,
                const std::function<void()>&) override {
#if defined(MPIX_ERR_PROC_FAILED)
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      // As NCCL's ncclCommShrink (2.28.9, seen on a GPU): an aborted communicator has nothing left to
      // shrink, and one that met an error (its peer's process gone) is refused.
      if (state_->aborted) return Status::Aborted("host double: shrink: the communicator was aborted");
      if (!state_->error.ok()) return Status(state_->error.code(), "host double: shrink: " + state_->error.message());
    }
    abort();
    MPIX_Comm_revoke(comm_);
    MPI_Comm fresh = MPI_COMM_NULL;
    const int rc = MPIX_Comm_shrink(comm_, &fresh);
    if (rc != MPI_SUCCESS) return Status::Internal("host double: MPIX_Comm_shrink failed: " + mpi_error(rc));
    const std::vector<int> lost = lost_members(comm_, fresh);
    if (lost != excluded) {
      MPI_Comm_free(&fresh);
      return Status::Internal("host double: shrink excluded ranks " + list(excluded) + ", but the ranks lost are " +
                              list(lost));
    }
    device_->count_shrink();
    *out = std::make_unique<DoubleComm>(device_, fresh);
    return Status::OK();
#else
    return DeviceComm::shrink(excluded, out, {});
#endif
  }

 private:
  // What the stream's work shares with the communicator, kept alive by both.
  struct State {
    std::mutex mu;
    bool aborted = false;
    Status error;
  };

  static std::string list(const std::vector<int>& ranks) {
    std::string text = "[";
    for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
    return text + "]";
  }

  Status check(const void* data, int64_t bytes, const std::string& what) {
    if (bytes == 0 || device_->is_device_memory(data, bytes)) return Status::OK();
    return Status::InvalidArgument("host double: " + what + " is not device memory");
  }

  Status submit(DeviceStream stream, Starter starter) {
    device_->note_launch();
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      if (state_->aborted) return Status::Aborted("the communicator was aborted");
    }
    if (in_group_) {
      group_.push_back(std::move(starter));
      group_stream_ = stream;
      return Status::OK();
    }
    return launch(stream, {std::move(starter)});
  }

  // On the stream: start every call's requests, then wait for all of them, politely, until done,
  // failed or aborted.
  Status launch(DeviceStream stream, std::vector<Starter> starters) {
    std::shared_ptr<State> state = state_;
    const uint64_t reports = peer_failures_reported();
    device_->enqueue(stream, [state, starters, reports] {
      {
        std::lock_guard<std::mutex> lock(state->mu);
        if (state->aborted) return;
      }
      std::vector<MPI_Request> requests;
      std::vector<std::shared_ptr<void>> keep;
      for (const Starter& start : starters) {
        const int rc = start(&requests, &keep);
        if (rc != MPI_SUCCESS) {
          std::lock_guard<std::mutex> lock(state->mu);
          if (state->error.ok()) state->error = Status::Internal("MPI (host double) failed: " + mpi_error(rc));
          return;
        }
      }
      auto nap = std::chrono::microseconds(5);
      for (int i = 0;; ++i) {
        if (surviving_peer_failures() && peer_failures_reported() != reports) {
          // In place, a peer failed since this call began: as NCCL's kernel, it waits for the recovery's
          // abort or shrink, reporting nothing more. (With this thread driving MPI's progress too through
          // ULFM's failure handling, Open MPI 5.0.11 crashed in its agreement or shrink about 1 run in 40.)
          const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
          while (std::chrono::steady_clock::now() < until) {
            {
              std::lock_guard<std::mutex> lock(state->mu);
              if (state->aborted) return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          }
          std::lock_guard<std::mutex> lock(state->mu);
          if (state->error.ok()) state->error = Status::Internal("host double: a peer failed and no recovery aborted the call");
          return;
        }
        int done = 0;
        const int rc = MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) {
          std::lock_guard<std::mutex> lock(state->mu);
          if (state->error.ok()) state->error = Status::Internal("MPI (host double) failed: " + mpi_error(rc));
          return;
        }
        if (done) return;
        {
          std::lock_guard<std::mutex> lock(state->mu);
          if (state->aborted) return;  // the requests are abandoned with the communicator
        }
        if (i < 64) {
          sched_yield();
        } else {
          std::this_thread::sleep_for(nap);
          nap = std::min(nap * 2, std::chrono::microseconds(1000));
        }
      }
    });
    return Status::OK();
  }

  HostDouble* device_;
  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 0;
  bool in_group_ = false;
  std::vector<Starter> group_;
  DeviceStream group_stream_ = nullptr;
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace

Status HostDouble::unique_id(std::string* id) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::lock_guard<std::mutex> lock(mu_);
  *id = "host-double:" + std::to_string(rank) + ":" + std::to_string(next_id_++);
  return Status::OK();
}

Status HostDouble::create_comm(int, const CommMembers& m, std::unique_ptr<DeviceComm>* comm) {
  MPI_Comm c = MPI_COMM_NULL;
  if (m.mpi_comm != nullptr) {
    // A copy of the members' communicator, so that its traffic never meets kolo's own on it.
    const int rc = MPI_Comm_dup(*static_cast<const MPI_Comm*>(m.mpi_comm), &c);
    if (rc != MPI_SUCCESS) return Status::Internal("host double: MPI_Comm_dup failed: " + mpi_error(rc));
  } else {
    // A world without MPI (the Gloo world, started by mpirun for the double's sake): the members'
    // job ranks are their MPI_COMM_WORLD ranks. Collective over the members only; the id's hash
    // keeps two groups being made at once apart.
    MPI_Group world = MPI_GROUP_NULL, members = MPI_GROUP_NULL;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, static_cast<int>(m.job_ranks.size()), m.job_ranks.data(), &members);
    const int tag = static_cast<int>(std::hash<std::string>()(m.id) % 32768);
    const int rc = MPI_Comm_create_group(MPI_COMM_WORLD, members, tag, &c);
    MPI_Group_free(&members);
    MPI_Group_free(&world);
    if (rc != MPI_SUCCESS) return Status::Internal("host double: MPI_Comm_create_group failed: " + mpi_error(rc));
  }
  *comm = std::make_unique<DoubleComm>(this, c);
  ++comms_made_;
  return Status::OK();
}

}  // namespace testing
}  // namespace kolo
