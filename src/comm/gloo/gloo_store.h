// Gloo's rendezvous store (gloo::rendezvous::Store, what connectFullMesh swaps addresses through) over
// kolo's key-value store (store/key_value_store.h), under a prefix of the world's, every wait bounded by the
// start's deadline. Gloo takes failures as exceptions: a store error is thrown as gloo::IoException with
// kolo's message, which the mesh (gloo_mesh.h) turns back into a Status. A wait asks `peers_there` (where
// given) every quarter second, and ends with its status once that is not OK.
#pragma once

#include <gloo/rendezvous/store.h>

#include <functional>
#include <string>
#include <vector>

#include "store/key_value_store.h"

namespace kolo {

class GlooStore : public gloo::rendezvous::Store {
 public:
  GlooStore(KeyValueStore& store, std::string prefix, KeyValueStore::Clock::time_point deadline,
            std::function<Status()> peers_there = nullptr)
      : store_(store), prefix_(std::move(prefix)), deadline_(deadline), peers_there_(std::move(peers_there)) {}
  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

 private:
  // Until `wait_until(deadline)` is OK or a timeout at `deadline`, ended early by peers_there_.
  Status bounded(KeyValueStore::Clock::time_point deadline,
                 const std::function<Status(KeyValueStore::Clock::time_point)>& wait_until);

  KeyValueStore& store_;
  const std::string prefix_;
  const KeyValueStore::Clock::time_point deadline_;
  const std::function<Status()> peers_there_;
};

}  // namespace kolo
