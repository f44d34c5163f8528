#include "engine/tensor_queue.h"

#include <chrono>

namespace kolo {

Status TensorQueue::push(std::unique_ptr<TensorEntry> entry, bool wake) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return Status::NotInitialized(closed_reason_);
    const std::string& name = entry->request.name;
    if (joining_) {
      return Status::InvalidArgument(std::string(op_kind_name(entry->request.kind)) + " of tensor '" + name +
                                     "' on rank " + std::to_string(entry->request.rank) +
                                     ": this rank is in join(); submit ops again once every rank has joined");
    }
    if (entries_.count(name)) {
      return Status::InvalidArgument("tensor '" + name + "' is already in flight on rank " +
                                     std::to_string(entry->request.rank) +
                                     ": wait for it before submitting the name again");
    }
    fresh_.push_back(entry->request);
    if (!wake) ++unannounced_;
    joining_ = entry->request.kind == OpKind::kJoin;
    entries_.emplace(name, std::move(entry));
  }
  if (wake) cv_.notify_one();
  return Status::OK();
}

std::vector<Request> TensorQueue::take_new() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Request> out;
  out.swap(fresh_);
  unannounced_ = 0;
  return out;
}

bool TensorQueue::wait_for_work(double seconds) {
  std::unique_lock<std::mutex> lock(mu_);
  const bool work =
      cv_.wait_for(lock, std::chrono::duration<double>(seconds),
                   [this] { return fresh_.size() > unannounced_ || woken_ || device_done_; }) &&
      (fresh_.size() > unannounced_ || woken_);
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

size_t TensorQueue::in_flight() {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

bool TensorQueue::only(int64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size() == 1 && entries_.begin()->second->handle == handle;
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
  std::unique_ptr<TensorEntry> e = std::move(it->second);
  entries_.erase(it);
  if (e->request.kind == OpKind::kJoin) joining_ = false;
  return e;
}

std::vector<std::unique_ptr<TensorEntry>> TensorQueue::close(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  closed_reason_ = reason;
  std::vector<std::unique_ptr<TensorEntry>> out;
  for (auto& kv : entries_) out.push_back(std::move(kv.second));
  entries_.clear();
  fresh_.clear();
  return out;
}

}  // namespace kolo
