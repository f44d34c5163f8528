// Responses of past negotiations, by name, so that a name that recurs every step is agreed by one
// bit in a bit-vector allreduce instead of a gather to rank 0 and a broadcast.
//
// Every rank holds an identical cache: it changes only at points of a cycle that every rank passes
// in the same order (put after a negotiation, touch on a cached run, erase on invalidation), and
// its eviction is deterministic, so a bit position means the same response on every rank.
#pragma once

#include <cstdint>
#include <list>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/message.h"

namespace kolo {

class ResponseCache {
 public:
  explicit ResponseCache(size_t capacity) : capacity_(capacity) {}

  enum class Lookup {
    kMiss,     // name not cached
    kHit,      // cached with exactly these parameters
    kChanged,  // cached with other parameters: the entry must be invalidated on every rank
  };
  Lookup lookup(const Request& request, uint32_t* position) const;

  // Caches `response`, evicting the least recently used entry when full; its name is returned in
  // `evicted` (empty if nothing was evicted). Returns the position used.
  uint32_t put(const Response& response, std::string* evicted);
  void touch(uint32_t position);
  void erase(uint32_t position);

  bool contains(uint32_t position) const;
  const Response& get(uint32_t position) const;

  size_t capacity() const { return capacity_; }
  size_t size() const { return by_name_.size(); }
  // Bit positions in use or used before: the length of the bit vector ranks exchange.
  size_t num_positions() const { return slots_.size(); }

 private:
  struct Slot {
    Response response;
    bool used = false;
    std::list<uint32_t>::iterator lru;
  };

  size_t capacity_;
  std::vector<Slot> slots_;
  std::set<uint32_t> free_;                          // erased positions, reused lowest first
  std::list<uint32_t> lru_;                          // front: most recently used
  std::unordered_map<std::string, uint32_t> by_name_;
};

}  // namespace kolo
