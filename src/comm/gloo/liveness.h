// This rank's liveness, for its survivors' agreement after a loss in place (survivors.h): beats on a counter
// of the current generation's, and a held key (store/store_table.h) that goes with its connection, from a
// thread and a connection of its own for the world's life. Apart from the peer watch, which runs only while
// kolo is initialized: a survivor on its way into the agreement has stopped it, and must not look frozen.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "comm/gloo/survivors.h"
#include "store/key_value_store.h"

namespace kolo {

class Liveness {
 public:
  // Connects to the store; beats `interval_seconds` apart.
  static Status start(const std::string& host, int port, const std::string& token, double interval_seconds,
                      std::unique_ptr<Liveness>* out);
  ~Liveness();
  Liveness(const Liveness&) = delete;
  Liveness& operator=(const Liveness&) = delete;

  // From now on, this rank's liveness in `generation` (its held key set before this returns).
  Status enter(const Generation& generation);

  static std::string held_key(const Generation& generation, int rank);
  static std::string beat_key(const Generation& generation, int rank);

 private:
  Liveness(std::unique_ptr<KeyValueStore> store, double interval_seconds);
  void loop();

  std::unique_ptr<KeyValueStore> store_;
  const double interval_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::string beat_;  // the counter it beats now ("" before enter)
  std::thread thread_;
};

}  // namespace kolo
