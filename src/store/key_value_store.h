// The key-value store that ranks rendezvous through where there is no MPI: rank 0 serves it (or torchrun's
// agent does), every rank reaches it as a client, and they swap addresses and agree on counters through it.
// kolo's rendezvous sees only this seam; TcpStoreClient is the one behind it, speaking torch's TCPStore
// protocol, and a test can put anything else behind it.
//
// Keys are strings, values bytes (std::string). A call that waits for other ranks (get, multi_get, wait)
// takes a deadline on the steady clock and gives Status::Timeout once it passes; every other call is
// bounded by the store's own reply timeout. Every failure's message names the store's host:port, what was
// asked and, where it helps, what to do.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "kolo/status.h"

namespace kolo {

class KeyValueStore {
 public:
  using Clock = std::chrono::steady_clock;

  virtual ~KeyValueStore() = default;

  // "host:port", or whatever names this store in messages.
  virtual std::string where() const = 0;

  virtual Status set(const std::string& key, const std::string& value) = 0;
  // Waits until `key` exists (or the deadline), then reads it.
  virtual Status get(const std::string& key, Clock::time_point deadline, std::string* value) = 0;
  // Waits until every key exists (or the deadline), then reads them all, in the order of `keys`.
  virtual Status multi_get(const std::vector<std::string>& keys, Clock::time_point deadline,
                           std::vector<std::string>* values) = 0;
  // keys[i] = values[i], for every i (the two the same length), in one request.
  virtual Status multi_set(const std::vector<std::string>& keys, const std::vector<std::string>& values) = 0;
  // Sets `key` to `desired` where its value is `expected`; a missing key counts as "" (`expected` empty
  // creates it). `*current` is the value the store reports afterwards, which is torch's: the key's value,
  // or `expected` itself where the key is missing and `expected` is not empty (the key stays missing).
  virtual Status compare_set(const std::string& key, const std::string& expected, const std::string& desired,
                             std::string* current) = 0;
  // Adds `delta` to the decimal integer in `key` (a missing key counts as 0) and gives the sum.
  virtual Status add(const std::string& key, int64_t delta, int64_t* result) = 0;
  // Appends `value` to the key's bytes (creating the key).
  virtual Status append(const std::string& key, const std::string& value) = 0;
  // Whether every key exists now, without waiting.
  virtual Status check(const std::vector<std::string>& keys, bool* all_present) = 0;
  // Until every key exists, or the deadline.
  virtual Status wait(const std::vector<std::string>& keys, Clock::time_point deadline) = 0;
  // `*deleted` (may be null): whether the key existed.
  virtual Status delete_key(const std::string& key, bool* deleted) = 0;
  // Keys in the whole store, the other clients' too.
  virtual Status num_keys(int64_t* count) = 0;
};

}  // namespace kolo
