#include "engine/tensor_queue.h"

#include <algorithm>
#include <chrono>

#include "common/clock.h"

namespace kolo {

std::unique_ptr<TensorEntry> TensorQueue::new_entry() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!spare_entries_.empty()) {
      std::unique_ptr<TensorEntry> e = std::move(spare_entries_.back());
      spare_entries_.pop_back();
      return e;
    }
  }
  return std::make_unique<TensorEntry>();
}

void TensorQueue::recycle(std::unique_ptr<TensorEntry> entry) {
  if (!entry) return;
  reset_for_reuse(entry.get());  // outside the lock: it may free what the op left (its output's memory)
  std::lock_guard<std::mutex> lock(mu_);
  if (spare_entries_.size() < kMostSpares) spare_entries_.push_back(std::move(entry));
}

void TensorQueue::set_soon_seconds(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  soon_seconds_ = seconds;
}

Status TensorQueue::push(std::unique_ptr<TensorEntry> entry, Announce announce) {
  bool wake = announce == Announce::kWake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string& name = entry->request.name;
    // As the ops the close failed: an op that came just after them is told the same, naming it.
    if (closed_) return Status(closed_code_, "tensor '" + name + "' did not run: " + closed_reason_);
    if (joining_) {
      return Status::InvalidArgument(std::string(op_kind_name(entry->request.kind)) + " of tensor '" + name +
                                     "' on rank " + std::to_string(entry->request.rank) +
                                     ": this rank is in join(); submit ops again once every rank has joined");
    }
    if (entries_.count(name) || (reserved_ && reserved_name_ == name)) {
      return Status::InvalidArgument("tensor '" + name + "' is already in flight on rank " +
                                     std::to_string(entry->request.rank) +
                                     ": wait for it before submitting the name again");
    }
    if (fresh_count_ == fresh_.size()) fresh_.emplace_back();
    fresh_[fresh_count_++] = entry->request;  // an assignment: into a spare request's memory
    if (announce == Announce::kSoon) {
      const double now = steady_seconds();
      if (soon_seconds_ <= 0 || listening_until_ > now + soon_seconds_) {
        wake = true;  // the engine thread sleeps long: woken, as for any op
      } else {
        ++unannounced_;
        if (soon_++ == 0) soon_due_ = now + soon_seconds_;
      }
      // Ops that come this close together (a burst, a tight loop): the next finds the thread napping.
      // Further apart, the naps would end before it came.
      if (now - last_soon_ <= soon_seconds_ * kNapsSpan) nap_ = soon_seconds_;
      last_soon_ = now;
    } else if (announce == Announce::kQuiet) {
      ++unannounced_;
      soon_ = 0;  // its caller's cycle takes up every new request
    }
    joining_ = entry->request.kind == OpKind::kJoin;
    insert_locked(std::move(entry));
    recount();
  }
  if (wake) cv_.notify_one();
  return Status::OK();
}

void TensorQueue::insert_locked(std::unique_ptr<TensorEntry> entry) {
  if (spare_nodes_.empty()) {
    const std::string& name = entry->request.name;
    entries_.emplace(name, std::move(entry));
    return;
  }
  Entries::node_type node = std::move(spare_nodes_.back());
  spare_nodes_.pop_back();
  node.key() = entry->request.name;
  node.mapped() = std::move(entry);
  entries_.insert(std::move(node));
}

bool TensorQueue::reserve(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_ || joining_ || reserved_ || entries_.count(name) != 0) return false;
  reserved_ = true;
  reserved_name_.assign(name);  // into the memory the last reservation's name had
  recount();
  return true;
}

void TensorQueue::unreserve() {
  std::lock_guard<std::mutex> lock(mu_);
  reserved_ = false;
  recount();
}

void TensorQueue::adopt(std::unique_ptr<TensorEntry> entry) {
  std::lock_guard<std::mutex> lock(mu_);
  reserved_ = false;
  insert_locked(std::move(entry));
  recount();
}

size_t TensorQueue::take_new_unless_driven(std::vector<Request>* out, const std::atomic<int>& drivers) {
  std::lock_guard<std::mutex> lock(mu_);
  if (unannounced_ > 0 && drivers.load() > 0) return kLeftToCaller;
  return take_locked(out);
}

bool TensorQueue::leave_new_to_caller() {
  std::lock_guard<std::mutex> lock(mu_);
  unannounced_ = fresh_count_;
  soon_ = 0;
  return fresh_count_ > 0;
}

size_t TensorQueue::take_new(std::vector<Request>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  return take_locked(out);
}

size_t TensorQueue::take_locked(std::vector<Request>* out) {
  const size_t n = fresh_count_;
  if (out->size() < n) out->resize(n);
  for (size_t i = 0; i < n; ++i) std::swap((*out)[i], fresh_[i]);
  fresh_count_ = 0;
  unannounced_ = 0;
  soon_ = 0;
  return n;
}

bool TensorQueue::wait_for_work(double seconds) {
  std::unique_lock<std::mutex> lock(mu_);
  double now = steady_seconds();
  const double until = now + seconds;
  bool work = false;
  for (;;) {
    if (fresh_count_ > unannounced_ || woken_) {
      work = true;
      break;
    }
    if (device_done_) break;
    if (soon_ > 0 && now >= soon_due_) {
      // No wait came for them: a cycle is due, which takes them up unless a caller drives meanwhile (its
      // cycle takes them; they stay unannounced, so that this thread does not spin beside it).
      soon_ = 0;
      work = true;
      break;
    }
    if (now >= until) break;
    double wake_at = until;
    if (soon_ > 0) wake_at = std::min(wake_at, soon_due_);
    if (nap_ > 0) {
      wake_at = std::min(wake_at, now + nap_);
      nap_ = nap_ * 2 > soon_seconds_ * kLongestNap ? 0 : nap_ * 2;
    }
    listening_until_ = wake_at;
    cv_.wait_for(lock, std::chrono::duration<double>(wake_at - now));
    now = steady_seconds();
  }
  listening_until_ = 0;
  woken_ = false;
  device_done_ = false;
  return work;
}

void TensorQueue::device_done() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    device_done_ = true;
  }
  cv_.notify_one();
}

void TensorQueue::wake() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    woken_ = true;
  }
  cv_.notify_one();
}

void TensorQueue::recount() {
  count_.store(entries_.size() + (reserved_ ? 1 : 0), std::memory_order_release);
  sole_.store(entries_.size() == 1 && !reserved_ ? entries_.begin()->second->handle : 0, std::memory_order_release);
}

TensorEntry* TensorQueue::find(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : it->second.get();
}

std::unique_ptr<TensorEntry> TensorQueue::remove(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(name);
  if (it == entries_.end()) return nullptr;
  Entries::node_type node = entries_.extract(it);
  std::unique_ptr<TensorEntry> e = std::move(node.mapped());
  if (spare_nodes_.size() < kMostSpares) spare_nodes_.push_back(std::move(node));
  if (e->request.kind == OpKind::kJoin) joining_ = false;
  recount();
  return e;
}

std::vector<std::unique_ptr<TensorEntry>> TensorQueue::close(const std::string& reason, StatusCode code) {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  closed_reason_ = reason;
  closed_code_ = code;
  std::vector<std::unique_ptr<TensorEntry>> out;
  for (auto& kv : entries_) out.push_back(std::move(kv.second));
  entries_.clear();
  recount();
  fresh_count_ = 0;
  return out;
}

}  // namespace kolo
