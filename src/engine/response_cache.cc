#include "engine/response_cache.h"

#include <cassert>

namespace kolo {

ResponseCache::Lookup ResponseCache::lookup(const Request& request, uint32_t* position) const {
  auto it = by_name_.find(request.name);
  if (it == by_name_.end()) return Lookup::kMiss;
  *position = it->second;
  return request_matches_response(request, slots_[it->second].response) ? Lookup::kHit
                                                                        : Lookup::kChanged;
}

uint32_t ResponseCache::put(const Response& response, std::string* evicted) {
  evicted->clear();
  auto existing = by_name_.find(response.name);
  if (existing != by_name_.end()) {
    slots_[existing->second].response = response;
    touch(existing->second);
    return existing->second;
  }
  uint32_t pos;
  if (!free_.empty()) {
    pos = *free_.begin();
    free_.erase(free_.begin());
  } else if (slots_.size() < capacity_) {
    pos = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  } else {
    pos = lru_.back();
    *evicted = slots_[pos].response.name;
    erase(pos);
    free_.erase(pos);
  }
  Slot& slot = slots_[pos];
  slot.response = response;
  slot.used = true;
  lru_.push_front(pos);
  slot.lru = lru_.begin();
  by_name_[response.name] = pos;
  return pos;
}

void ResponseCache::touch(uint32_t position) {
  assert(contains(position));
  Slot& slot = slots_[position];
  lru_.splice(lru_.begin(), lru_, slot.lru);
}

void ResponseCache::erase(uint32_t position) {
  if (!contains(position)) return;
  Slot& slot = slots_[position];
  by_name_.erase(slot.response.name);
  lru_.erase(slot.lru);
  slot.used = false;
  slot.response = Response();
  free_.insert(position);
}

bool ResponseCache::contains(uint32_t position) const {
  return position < slots_.size() && slots_[position].used;
}

const Response& ResponseCache::get(uint32_t position) const {
  assert(contains(position));
  return slots_[position].response;
}

}  // namespace kolo
