// What a lost peer changes on this rank, in one object the runtime owns and passes to who needs it:
// whether the job survives a loss in place (ULFM on), the failure every op then gets, the running
// engines a loss abandons, the peer watch, and what must outlive a loss to the process's end.
//
// Process-wide state that stays outside it, and why: the failure hook and its registry (comm/peer_failure.h,
// and ULFM's communicators, comm/mpi/mpi_fault.h: an MPI error handler carries no user data, so the one that
// sees a failure must find the registry without an object), and the give-up flag (comm/give_up.h: every wait
// of every collective polls it, and a loss must reach waits on threads that hold no reference to the
// runtime).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "comm/device/device_context.h"
#include "comm/peer_watch.h"
#include "comm/world.h"
#include "engine/engine.h"
#include "engine/handle_table.h"

namespace kolo {

class FaultDomain {
 public:
  // `handles`: the ops in flight that a loss fails.
  explicit FaultDomain(HandleTable* handles) : handles_(handles) {}

  // Whether a lost peer is survived in place: set when the job's communicator opens; empty: it is.
  void set_not_in_place(std::string why);
  bool in_place() const;
  std::string not_in_place() const;
  // This rank in the job, for the messages (changes with a recovery in place).
  void set_rank(int job_rank);

  // The running engines: a loss abandons each (its thread may be stuck in a transport for good).
  void add_engine(std::shared_ptr<Engine> engine);
  void forget_engine(const std::shared_ptr<Engine>& engine);
  std::vector<std::shared_ptr<Engine>> engines() const;
  // Keeps what a stuck engine thread may still use until the process ends.
  void keep(std::shared_ptr<void> thing);

  // The peer watch over the job (the world's): reports a silent peer to peer_lost. The world is also what
  // ends the job when a caller stays stuck after a loss.
  Status start_watch(World& world, double timeout_seconds);
  // Stops it, saying goodbye; kept to the process's end when it cannot stop.
  void stop_watch();

  // A peer stopped answering (the watch's thread). In place: reported to ULFM as a failure. Else every
  // engine is abandoned, every op in flight fails naming the peer, and so does every op after.
  void peer_lost(const std::string& why);
  // ULFM's report (on the thread that saw it, kolo's communicators already revoked): every op in
  // flight and every later one fails with kPeersFailed until recover_in_place().
  void peers_failed(const std::string& what);
  // OK, or why kolo stopped on a lost peer (the job must end). is_lost(): the same, without a lock (every
  // op asks).
  Status lost() const;
  bool is_lost() const { return is_lost_.load(std::memory_order_acquire); }
  // In place: OK, or the failure not yet recovered from.
  Status failure_in_place() const;
  bool failed_in_place() const { return !failure_in_place().ok(); }
  // After the survivors shrank the job: the failure is behind them.
  void recovered();
  // In place: a GPU context whose communicators hold the lost peer, to shrink once its engines end.
  void add_failed_device(std::shared_ptr<DeviceContext> device);
  std::shared_ptr<DeviceContext> take_failed_device();

 private:
  // Sets the failure (`why`, called under mu_, returns it), abandons every engine and fails every op in
  // flight with it (how many: *failed_ops).
  Status fail_everything(size_t* failed_ops, const std::function<Status()>& why);
  // After a lost peer (no ULFM): ends the job if a caller stays stuck in a cycle it drives.
  void end_if_a_caller_is_stuck(const std::string& why);

  HandleTable* const handles_;
  mutable std::mutex mu_;
  std::string not_in_place_ = "kolo has not started";
  int rank_ = -1;
  std::vector<std::shared_ptr<Engine>> engines_;  // every running engine: the job's and each set's
  std::vector<std::shared_ptr<void>> kept_;       // after a loss, to the process's end
  std::unique_ptr<PeerWatch> watch_;
  World* world_ = nullptr;
  Status lost_;            // not OK once a peer is lost (no ULFM)
  std::atomic<bool> is_lost_{false};
  Status peers_failed_;    // in place: not OK from a peer's failure until recovery
  std::vector<std::shared_ptr<DeviceContext>> failed_devices_;
};

}  // namespace kolo
