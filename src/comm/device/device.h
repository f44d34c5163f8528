// The device seam: everything kolo's GPU path needs from a GPU and its collective library, and no
// more. Two implementations: CUDA + NCCL (src/cuda, the only code that names them) and a host
// double (tests/cpp/gpu_double: host memory, a worker thread per stream, MPI underneath), which lets
// every line above this seam run in CI on machines without a GPU.
//
// Streams and events are opaque handles (cudaStream_t and cudaEvent_t for CUDA). Work on a stream
// runs in order, after every call that enqueued it has returned; nothing here blocks the host
// except synchronize().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kolo/status.h"
#include "kolo/tensor.h"
#include "kolo/types.h"

namespace kolo {

using DeviceStream = void*;  // null: the default stream of the device
using DeviceEvent = void*;

// One tensor of a batched copy: `count` elements from `src` (of the transform's `from` type) to
// `dst` (of its `to` type). A null src fills dst with the identity of the transform's reduce op.
struct CopyPiece {
  const void* src = nullptr;
  void* dst = nullptr;
  int64_t count = 0;
};

// What a batched copy does to every element on its way: a cast (float32 to and from float16 or
// bfloat16, for compression) and a scaling, with the arithmetic of kolo's CPU path (cpu/kernels.h):
// floating point multiplied in double precision, integers divided, truncating.
struct CopyTransform {
  DataType from = DataType::kFloat32;
  DataType to = DataType::kFloat32;
  double scale = 1.0;       // floating point
  int64_t divisor = 1;      // integers (an Average)
  ReduceOp identity = ReduceOp::kSum;  // what a null src fills with
};

// A communicator over a group of ranks on their devices (an NCCL communicator). Every call
// enqueues work on `stream` and returns; ranks must make the same calls in the same order.
class DeviceComm {
 public:
  virtual ~DeviceComm() = default;
  virtual int size() const = 0;
  virtual int rank() const = 0;
  // Sum, Min, Max or Product (an Average is a Sum, divided afterwards by kolo).
  virtual Status allreduce(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op,
                           DeviceStream stream) = 0;
  // Rank r receives elements [r * recv_count, (r + 1) * recv_count) of the reduction.
  virtual Status reducescatter(const void* send, void* recv, int64_t recv_count, DataType dtype, ReduceOp op,
                               DeviceStream stream) = 0;
  // Every rank sends send_count elements; recv holds size() * send_count, in rank order.
  virtual Status allgather(const void* send, void* recv, int64_t send_count, DataType dtype, DeviceStream stream) = 0;
  // send is read on root only.
  virtual Status broadcast(const void* send, void* recv, int64_t count, DataType dtype, int root,
                           DeviceStream stream) = 0;
  virtual Status send(const void* data, int64_t bytes, int peer, DeviceStream stream) = 0;
  virtual Status recv(void* data, int64_t bytes, int peer, DeviceStream stream) = 0;
  // Calls between group_start() and group_end() are launched together (point-to-point exchanges,
  // several broadcasts).
  virtual Status group_start() = 0;
  virtual Status group_end() = 0;
  // An error the communicator has met since it was made (a peer died, the network failed), with
  // the library's own words; OK if none. Never blocks.
  virtual Status async_error() = 0;
  // Stops every operation on the communicator; afterwards none of its work writes memory and every
  // call fails. Bounded: returns even when peers are frozen.
  virtual void abort() = 0;
  // After peers are lost: a communicator of the members that remain, this one's ranks less `excluded`
  // (ascending), in the same order (NCCL's ncclCommShrink). Collective over the remaining members; stops
  // this communicator's work first; this one is then only to be aborted. kUnsupported where the library
  // cannot (kolo then makes a new communicator, as at the start). Bounded, as abort(); `while_waiting` is
  // called between polls while the members meet (the caller keeps its own progress going: MPI's
  // failure detector hears nothing from a process that makes no MPI call).
  virtual Status shrink(const std::vector<int>& excluded, std::unique_ptr<DeviceComm>* out,
                        const std::function<void()>& while_waiting) {
    (void)excluded;
    (void)out;
    (void)while_waiting;
    return Status::Unsupported("this device library cannot shrink a communicator");
  }
};

// Who is in a new communicator. `id` comes from unique_id() on the group's first member and is
// the same on every member.
struct CommMembers {
  std::string id;
  int size = 0;
  int rank = 0;                 // this process's index in the group
  // For implementations built on MPI (the tests' host double): the address of the MPI_Comm of exactly
  // these members, in this rank order, valid during create_comm (which every member calls). Not
  // MPI_COMM_WORLD ranks: after a peer is lost in place, a communicator over MPI_COMM_WORLD fails.
  const void* mpi_comm = nullptr;
  // The members' job ranks, in this rank order (the double's way in where the group has no MPI_Comm).
  std::vector<int> job_ranks;
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  // E.g. "CUDA 13.0, NCCL 2.28.9".
  virtual std::string description() const = 0;
  // OK when this process can use a GPU; else why not (no device, no driver, ...).
  virtual Status usable() = 0;
  // Makes `ordinal` the calling thread's device (kolo's thread does this once).
  virtual Status bind(int ordinal) = 0;
  // The calling thread's device, so that a caller's thread running kolo's work gets its own back; -1
  // where devices are not bound to threads.
  virtual int bound() const { return -1; }

  // Memory on `ordinal` (device) and page-locked host memory. Errors name the size.
  virtual Status allocate(int ordinal, int64_t bytes, void** data) = 0;
  virtual void free(void* data) = 0;
  // Copies bytes in any direction (device or host memory on either side), ordered on `stream`.
  virtual Status copy(void* dst, const void* src, int64_t bytes, DeviceStream stream) = 0;

  virtual Status create_stream(int ordinal, DeviceStream* stream) = 0;
  virtual void destroy_stream(DeviceStream stream) = 0;
  // `timing`: the event can measure elapsed time (costs a little; for the timeline).
  virtual Status create_event(int ordinal, bool timing, DeviceEvent* event) = 0;
  virtual void destroy_event(DeviceEvent event) = 0;
  // The event completes when the stream reaches this point.
  virtual Status record(DeviceEvent event, DeviceStream stream) = 0;
  // Work enqueued on `stream` later starts after the event's last record has completed; the host
  // does not wait.
  virtual Status wait(DeviceStream stream, DeviceEvent event) = 0;
  // Whether the event's last record has completed. Never blocks.
  virtual Status query(DeviceEvent event, bool* done) = 0;
  // Blocks the host until the event's last record has completed.
  virtual Status synchronize(DeviceEvent event) = 0;
  // Seconds between two completed timing events.
  virtual Status elapsed(DeviceEvent start, DeviceEvent end, double* seconds) = 0;
  // Calls `callback` once, on a thread of the backend's, when the stream reaches this point, so that
  // kolo hears of work's end without polling. The callback must not call the backend or the collective
  // library (CUDA's rule for host functions, and NCCL's) and must return soon: work behind it on the
  // stream waits for it. It may never run if the work before it never ends (a lost peer). kUnsupported
  // where the backend cannot: kolo then polls.
  virtual Status host_callback(DeviceStream stream, std::function<void()> callback) {
    (void)stream;
    (void)callback;
    return Status::Unsupported("this device backend has no host callbacks");
  }

  // Every piece in one launch (a few launches for thousands of pieces), ordered on `stream`.
  virtual Status batched_copy(const std::vector<CopyPiece>& pieces, const CopyTransform& transform,
                              DeviceStream stream) = 0;

  // A new id for a communicator (on the group's first member; the caller sends it to the others).
  virtual Status unique_id(std::string* id) = 0;
  // Collective over the group's members, on `ordinal`.
  virtual Status create_comm(int ordinal, const CommMembers& members, std::unique_ptr<DeviceComm>* comm) = 0;
};

}  // namespace kolo
