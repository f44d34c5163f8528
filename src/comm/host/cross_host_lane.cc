#include "comm/host/cross_host_lane.h"

namespace kolo {

CrossHostLane::~CrossHostLane() {
  bool stuck = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    // Work still running waits on a peer that will not answer (the job is ending): leave it.
    stuck = busy_;
  }
  cv_.notify_all();
  if (!thread_.joinable()) return;
  if (stuck) {
    thread_.detach();
  } else {
    thread_.join();
  }
}

uint64_t CrossHostLane::submit(std::function<Status()> work) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  const uint64_t ticket = next_ticket_++;
  queue_.emplace_back(ticket, std::move(work));
  cv_.notify_all();
  return ticket;
}

Status CrossHostLane::wait(uint64_t ticket) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_.count(ticket) > 0; });
  Status s = done_[ticket];
  done_.erase(ticket);
  return s;
}

void CrossHostLane::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    auto item = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    Status s = item.second();
    lock.lock();
    busy_ = false;
    done_[item.first] = s;
    cv_.notify_all();
  }
}

}  // namespace kolo
