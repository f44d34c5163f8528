// Gloo's rendezvous store (gloo::rendezvous::Store, what connectFullMesh swaps addresses through) over
// kolo's key-value store (store/key_value_store.h), under a prefix of the world's, every wait bounded by the
// start's deadline. Gloo takes failures as exceptions: a store error is thrown as gloo::IoException with
// kolo's message, which the mesh (gloo_mesh.h) turns back into a Status.
#pragma once

#include <gloo/rendezvous/store.h>

#include <string>
#include <vector>

#include "store/key_value_store.h"

namespace kolo {

class GlooStore : public gloo::rendezvous::Store {
 public:
  GlooStore(KeyValueStore& store, std::string prefix, KeyValueStore::Clock::time_point deadline)
      : store_(store), prefix_(std::move(prefix)), deadline_(deadline) {}
  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

 private:
  KeyValueStore& store_;
  const std::string prefix_;
  const KeyValueStore::Clock::time_point deadline_;
};

}  // namespace kolo
