#include "engine/handle_table.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>
#include <vector>

#include "common/clock.h"

namespace kolo {

namespace {
// A small op ends within tens of microseconds of its wait, sooner than a thread asleep is woken on a
// busy host: the waiter watches this long before it sleeps.
constexpr double kWatchSeconds = 50e-6;
}  // namespace

template <typename Ready>
void HandleTable::watch_before_sleep(std::unique_lock<std::mutex>& lock, double seconds, Ready ready) {
  if (ready()) return;  // (the usual case for a blocking op, whose caller ran it: no clock read)
  const double until = steady_seconds() + std::min(seconds, kWatchSeconds);
  do {
    const uint64_t seen = ends_.load(std::memory_order_acquire);
    lock.unlock();
    bool changed = false;
    while (!changed && steady_seconds() < until) {
      std::this_thread::yield();
      changed = ends_.load(std::memory_order_acquire) != seen;
    }
    lock.lock();
    if (!changed) return;
  } while (!ready());
}

HandleTable::States::iterator HandleTable::add() {
  const int64_t h = next_++;
  if (spares_.empty()) return states_.emplace(h, State()).first;
  States::node_type node = std::move(spares_.back());
  spares_.pop_back();
  node.key() = h;
  return states_.insert(std::move(node)).position;
}

void HandleTable::forget(States::iterator it) {
  States::node_type node = states_.extract(it);
  if (spares_.size() >= kMostSpares) return;
  // Member by member (once per op): its callback, output and event go now; its name's memory stays.
  State& s = node.mapped();
  s.done = s.ending = s.released = false;
  s.on_done = nullptr;
  s.name.clear();
  s.status = Status();
  s.output = Output();
  s.done_event.reset();
  s.driver.reset();
  spares_.push_back(std::move(node));
}

int64_t HandleTable::create(DoneCallback on_done, const std::string& name, std::weak_ptr<Engine> engine) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = add();
  it->second.on_done = std::move(on_done);
  it->second.name.assign(name);  // into the spare's memory
  it->second.driver = std::move(engine);
  return it->first;
}

std::shared_ptr<Engine> HandleTable::driver(int64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = states_.find(handle);
  if (it == states_.end() || it->second.done || it->second.done_event != nullptr) return nullptr;
  return it->second.driver.lock();  // null for an engine shut down since
}

int64_t HandleTable::create_done(Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = add();
  it->second.done = true;
  it->second.status = std::move(status);
  return it->first;
}

void HandleTable::complete(int64_t handle, Status status, Output output) {
  DoneCallback on_done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = states_.find(handle);
    if (it == states_.end() || it->second.done || it->second.ending) return;  // ended already
    if (it->second.on_done) {
      it->second.ending = true;
      on_done = std::move(it->second.on_done);
    } else if (!end(it, &status, &output)) {
      return;  // nothing to call: ended under this one lock (a small op's latency counts every lock)
    }
  }
  if (on_done) {
    // Outside the lock: a callback may submit the next op.
    on_done(status);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = states_.find(handle);
    if (it == states_.end() || !end(it, &status, &output)) return;
  }
  cv_.notify_all();
}

bool HandleTable::end(States::iterator it, Status* status, Output* output) {
  if (it->second.released) {
    forget(it);
    return false;
  }
  it->second.done = true;
  it->second.status = std::move(*status);
  it->second.output = std::move(*output);
  it->second.done_event.reset();  // ended: nobody need wait on the device for it
  tick_ends();
  return true;
}

size_t HandleTable::fail_pending(const Status& status) {
  std::vector<std::pair<int64_t, std::string>> pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& kv : states_) {
      if (!kv.second.done && !kv.second.ending) pending.emplace_back(kv.first, kv.second.name);
    }
  }
  for (const auto& [h, name] : pending) {
    complete(h, Status(status.code(), "tensor '" + name + "' did not run: " + status.message()), Output());
  }
  return pending.size();
}

void HandleTable::launched(int64_t handle, std::shared_ptr<void> done_event, const Output& output) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = states_.find(handle);
    if (it == states_.end() || it->second.done) return;
    it->second.done_event = std::move(done_event);
    it->second.output = output;
    tick_ends();
  }
  cv_.notify_all();
}

Status HandleTable::wait_launched(int64_t handle, std::shared_ptr<void>* done_event, Output* output) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = states_.find(handle);
  if (it == states_.end()) {
    return Status::UnknownHandle("unknown handle " + std::to_string(handle) +
                                   " (never issued, or already waited on)");
  }
  auto ready = [&] {
    const State& s = states_.at(handle);
    return s.done || s.done_event != nullptr;
  };
  watch_before_sleep(lock, kWatchSeconds, ready);
  cv_.wait(lock, ready);
  it = states_.find(handle);
  Status status = std::move(it->second.status);
  if (!it->second.done) *done_event = std::move(it->second.done_event);
  if (output != nullptr) *output = std::move(it->second.output);
  if (!it->second.done && (it->second.on_done || it->second.ending)) {
    it->second.released = true;  // its callback has yet to run, when the op ends
  } else {
    forget(it);
  }
  return status;
}

Status HandleTable::wait(int64_t handle, double timeout_seconds, Output* output) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = states_.find(handle);
  if (it == states_.end()) {
    return Status::UnknownHandle("unknown handle " + std::to_string(handle) +
                                   " (never issued, or already waited on)");
  }
  auto done = [&] { return states_.at(handle).done; };
  if (timeout_seconds < 0) {
    watch_before_sleep(lock, kWatchSeconds, done);
    cv_.wait(lock, done);
  } else {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
    watch_before_sleep(lock, timeout_seconds, done);  // counts against the limit
    if (!cv_.wait_until(lock, until, done)) {
      return Status::Timeout("operation still in flight after " + std::to_string(timeout_seconds) + " s");
    }
  }
  it = states_.find(handle);
  Status status = std::move(it->second.status);
  if (output != nullptr) *output = std::move(it->second.output);
  forget(it);
  return status;
}

void HandleTable::discard(int64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = states_.find(handle);
  if (it != states_.end()) forget(it);
}

std::optional<Status> HandleTable::poll(int64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = states_.find(handle);
  if (it == states_.end()) {
    return Status::UnknownHandle("unknown handle " + std::to_string(handle) +
                                   " (never issued, or already waited on)");
  }
  if (!it->second.done) return std::nullopt;
  return it->second.status;
}

size_t HandleTable::size() {
  std::lock_guard<std::mutex> lock(mu_);
  return states_.size();
}

}  // namespace kolo
