// Operations this rank has submitted and not finished, by name. Framework threads push without
// waiting on the engine; the engine takes the new requests each cycle and finds entries by name
// when their response comes. In steady state it allocates nothing: finished entries, the map's nodes
// and the new requests are kept and reused (a small op's latency counted each allocation).
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/tensor_entry.h"

namespace kolo {

class TensorQueue {
 public:
  // An entry to fill and push: a finished one given back (recycle), its memory kept, or a new one.
  std::unique_ptr<TensorEntry> new_entry();
  // Takes back a finished entry for new_entry() (a few at most: the rest are freed).
  void recycle(std::unique_ptr<TensorEntry> entry);
  // How a push tells the engine thread of its op.
  enum class Announce {
    kWake,   // woken at once
    kQuiet,  // not woken: its caller runs the cycle itself (Engine::drive), or wakes it
    // A small async op: left for its wait to drive where the engine thread will look at the queue
    // within soon_seconds anyway (it is awake, napping, or due soon), else woken. Waking a sleeping
    // thread costs its waker a system call and an interrupt to the sleeper's core, most of a small
    // op's time on a virtual machine; a wait that comes at once then finds its op untaken.
    kSoon,
  };
  // Fails, keeping nothing, when the name is already in flight or the queue is closed.
  Status push(std::unique_ptr<TensorEntry> entry, Announce announce = Announce::kWake);
  // The most a kSoon push waits for the engine thread: 0 (the default) wakes it as kWake does.
  void set_soon_seconds(double seconds);
  // Moves the requests pushed since the last call to the front of *out, in push order, and returns
  // how many. The rest of *out is left as it is: both sides keep their requests' memory for the
  // next cycle.
  size_t take_new(std::vector<Request>* out);
  // As take_new, for the engine thread while callers may drive: takes nothing and returns kLeftToCaller
  // where a request was pushed without waking the engine while `*drivers` > 0 (read under the queue's
  // lock: a caller counts itself before its push), so that the caller's own cycle takes its op up.
  static constexpr size_t kLeftToCaller = static_cast<size_t>(-1);
  size_t take_new_unless_driven(std::vector<Request>* out, const std::atomic<int>& drivers);
  // A caller now drives (it has counted itself in the engine's drivers): every request pushed so far
  // counts as pushed without waking the engine, so the engine thread neither wakes for them nor takes
  // them while the caller drives (its wake-up then would spin, beside the caller, on a busy host).
  // False, leaving nothing, where nothing new is left (the engine thread's cycle has taken it up).
  bool leave_new_to_caller();
  // Waits until something is pushed (to be woken for), wake() is called, a kSoon push has waited
  // soon_seconds, device work has ended (device_done()), or `seconds` pass; true in the first three cases
  // (a cycle is due). Within a burst of kSoon pushes it sleeps in naps (kLongestNap), so that the next one
  // needs no wake.
  bool wait_for_work(double seconds);
  void wake();
  // Device work has ended (from the backend's thread, WorkSignal): ends the engine's wait without a
  // cycle being due, so that it polls the work's completions.
  void device_done();

  // Ops pushed and not yet removed. Lock-free (a driving caller asks after every cycle).
  size_t in_flight() const { return count_.load(std::memory_order_acquire); }
  // Whether the op of `handle` is the only one in flight. Lock-free.
  bool only(int64_t handle) const { return handle != 0 && sole_.load(std::memory_order_acquire) == handle; }
  // Valid until remove(name): only the thread running the engine's cycle removes.
  TensorEntry* find(const std::string& name);
  std::unique_ptr<TensorEntry> remove(const std::string& name);
  // Refuses pushes from now on (`code`, naming the op and `reason`), and hands back every entry still in flight.
  std::vector<std::unique_ptr<TensorEntry>> close(const std::string& reason, StatusCode code);

  // An express op (Engine::express) holds `name` in flight without an entry: true where the name is not
  // in flight and the queue is open and not joining; a push of the name is refused meanwhile. One at a
  // time.
  bool reserve(const std::string& name);
  void unreserve();
  // The reservation becomes `entry`, in flight as pushed but not new (its request went to the
  // controller already, in the express op's cycle). Never refused: the cycle lock is the caller's, so
  // the queue is not closed meanwhile.
  void adopt(std::unique_ptr<TensorEntry> entry);

 private:
  using Entries = std::unordered_map<std::string, std::unique_ptr<TensorEntry>>;
  // Spares kept at most, of entries and of nodes each: past a burst (a model's gradients), the rest
  // are freed.
  static constexpr size_t kMostSpares = 64;
  // After a kSoon push that came within kNapsSpan soon_seconds of the last one (a burst, a tight loop), the
  // engine thread sleeps in naps of soon_seconds, then twice that (kLongestNap), then as long as it is told
  // to: the next op of the burst finds it napping. Ops further apart wake it, and cost no naps.
  static constexpr double kLongestNap = 2, kNapsSpan = 3;
  // Under mu_, after entries_ changed: what in_flight() and only() read.
  void recount();
  // Under mu_: take_new's work.
  size_t take_locked(std::vector<Request>* out);
  // Under mu_: inserts `entry` under its name, in a spare node if there is one.
  void insert_locked(std::unique_ptr<TensorEntry> entry);

  std::mutex mu_;
  std::condition_variable cv_;
  Entries entries_;
  std::vector<Entries::node_type> spare_nodes_;  // removed entries' nodes, their keys' memory kept
  std::vector<std::unique_ptr<TensorEntry>> spare_entries_;
  std::vector<Request> fresh_;  // the first fresh_count_ are new; the rest, spares
  size_t fresh_count_ = 0;
  size_t unannounced_ = 0;  // of the new, pushed without waking the engine
  // kSoon pushes: of the unannounced, those the engine thread takes up at soon_due_ unless a caller does.
  size_t soon_ = 0;
  double soon_due_ = 0;
  double soon_seconds_ = 0;
  double nap_ = 0;              // the engine thread's next nap; 0: it sleeps as long as it is told to
  double last_soon_ = -1e9;     // when the last kSoon push came
  double listening_until_ = 0;  // when the sleeping engine thread next looks at the queue; 0 while awake
  bool woken_ = false;
  bool device_done_ = false;
  bool joining_ = false;  // a join is in flight: nothing more until it completes
  bool closed_ = false;
  std::string closed_reason_;
  StatusCode closed_code_ = StatusCode::kAborted;
  bool reserved_ = false;  // reserve(): reserved_name_ is in flight, with no entry
  std::string reserved_name_;
  std::atomic<size_t> count_{0};
  std::atomic<int64_t> sole_{0};  // the handle of the one op in flight; 0 when there are none or several
};

}  // namespace kolo
