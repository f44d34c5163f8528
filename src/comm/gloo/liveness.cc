#include "comm/gloo/liveness.h"

#include <chrono>

#include "store/tcp_store_client.h"

namespace kolo {

Status Liveness::start(const std::string& host, int port, const std::string& token, double interval_seconds,
                       std::unique_ptr<Liveness>* out) {
  std::unique_ptr<TcpStoreClient> client;
  Status s = TcpStoreClient::connect(host, port, token, KeyValueStore::Clock::now() + std::chrono::seconds(30), &client);
  if (!s.ok()) return Status(s.code(), "kolo's liveness for surviving in place: " + s.message());
  client->set_reply_timeout(std::chrono::milliseconds(static_cast<int64_t>(std::max(0.5, 3 * interval_seconds) * 1000)));
  out->reset(new Liveness(std::move(client), interval_seconds));
  return Status::OK();
}

Liveness::Liveness(std::unique_ptr<KeyValueStore> store, double interval_seconds)
    : store_(std::move(store)), interval_(interval_seconds) {
  thread_ = std::thread([this] { loop(); });
}

Liveness::~Liveness() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::string Liveness::held_key(const Generation& generation, int rank) {
  return generation.prefix + "held/live/" + std::to_string(rank);
}

std::string Liveness::beat_key(const Generation& generation, int rank) {
  return generation.prefix + "alive/" + std::to_string(rank);
}

Status Liveness::enter(const Generation& generation) {
  std::lock_guard<std::mutex> lock(mu_);
  // The store's one connection is this object's: calls on it are made under the lock.
  int64_t n = 0;
  Status s = store_->add(beat_key(generation, generation.rank), 1, &n);
  if (s.ok()) s = store_->set(held_key(generation, generation.rank), "1");
  if (!s.ok()) return Status(s.code(), "kolo's liveness for surviving in place: " + s.message());
  beat_ = beat_key(generation, generation.rank);
  return Status::OK();
}

void Liveness::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    // A beat the store does not answer is skipped: the store's silence is the peer watch's to judge.
    int64_t n = 0;
    if (!beat_.empty()) store_->add(beat_, 1, &n);
    cv_.wait_for(lock, std::chrono::duration<double>(interval_), [&] { return stopping_; });
  }
}

}  // namespace kolo
