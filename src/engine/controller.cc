#include "engine/controller.h"

#include <algorithm>

#include "common/ranks.h"
#include "common/logging.h"
#include "engine/rider.h"
#include "engine/wire.h"

namespace kolo {
namespace {

constexpr uint64_t kFlagUncached = 1;    // some rank has requests rank 0 has not seen
constexpr double kStallCheckInterval = 1.0;

size_t words_for(size_t bits) { return (bits + 63) / 64; }
void set_bit(std::vector<uint64_t>& v, size_t offset, size_t bit) { v[offset + bit / 64] |= 1ull << (bit % 64); }

// Calls f(bit) for each set bit of words [offset, offset + count), in ascending order.
template <typename F>
void for_each_bit(const std::vector<uint64_t>& v, size_t offset, size_t count, F f) {
  for (size_t w = 0; w < count; ++w) {
    uint64_t x = v[offset + w];
    while (x != 0) {
      const int b = __builtin_ctzll(x);
      f(w * 64 + static_cast<size_t>(b));
      x &= x - 1;
    }
  }
}

double stall_threshold(const Config& c) {
  double t = 0.0;
  for (double v : {c.stall_check_seconds, c.stall_shutdown_seconds}) {
    if (v > 0 && (t == 0.0 || v < t)) t = v;
  }
  return t;
}

}  // namespace

void CycleResult::clear() {
  responses.clear();
  shutdown = false;
  shutdown_ranks.clear();
  joined_ranks.clear();
  negotiated = false;
  ridden = false;
  rider.clear();
}

Controller::Controller(ControlChannel* channel, const Config& config, Clock clock, RankNames names)
    : channel_(channel),
      clock_(std::move(clock)),
      rank_(channel->rank()),
      size_(channel->size()),
      names_(std::move(names)),
      cached_stall_seconds_(stall_threshold(config)),
      rider_data_bytes_(static_cast<size_t>(config.small_op_bytes)),
      cache_(static_cast<size_t>(config.cache_capacity)),
      rider_(rider_data_bytes_ > 0 ? empty_rider(rider_data_bytes_) : std::string()) {
  if (rank_ == 0) {
    coordinator_ = std::make_unique<Coordinator>(
        size_, StallPolicy{config.stall_check_seconds, config.stall_shutdown_seconds}, names_);
  }
  last_stall_check_ = clock_();
}

void Controller::wait_on_cache(uint32_t position, const Request& request, double now) {
  if (spare_waiting_.empty()) {
    cached_waiting_.emplace(position, Waiting{request, now});
    return;
  }
  CachedWaiting::node_type node = std::move(spare_waiting_.back());
  spare_waiting_.pop_back();
  node.key() = position;
  node.mapped().request = request;  // an assignment: into the memory the node's request has
  node.mapped().since = now;
  cached_waiting_.insert(std::move(node));
}

void Controller::stop_waiting_on_cache(uint32_t position) {
  auto it = cached_waiting_.find(position);
  if (it == cached_waiting_.end()) return;
  CachedWaiting::node_type node = cached_waiting_.extract(it);
  constexpr size_t kMostSpares = 64;  // past a burst of cached ops, the rest are freed
  if (spare_waiting_.size() < kMostSpares) spare_waiting_.push_back(std::move(node));
}

void Controller::classify(const Request& request, double now, std::vector<uint64_t>* invalid) {
  if (request.kind == OpKind::kJoin) joined_here_ = true;
  uint32_t pos = 0;
  switch (cache_.capacity() > 0 ? cache_.lookup(request, &pos) : ResponseCache::Lookup::kMiss) {
    case ResponseCache::Lookup::kHit:
      if (!anyone_joined_) {
        wait_on_cache(pos, request, now);
        return;
      }
      // While any rank has joined, everything goes through rank 0, which knows who has. The entry
      // leaves every cache: a rank that submits this op once the join is over must not wait on it
      // there while this rank's request waits at rank 0.
      invalid->push_back(pos);
      break;
    case ResponseCache::Lookup::kChanged:
      // Parameters changed since the cached run: every rank drops the entry, and this request
      // goes to rank 0, which compares it with the other ranks' afresh.
      invalid->push_back(pos);
      break;
    case ResponseCache::Lookup::kMiss:
      break;
  }
  uncached_.push_back(Waiting{request, now});
}

Status Controller::cycle(const Request* submitted, size_t count, bool want_shutdown, CycleResult* result,
                         const RiderLoader& load) {
  result->clear();
  const double now = clock_();
  std::vector<uint64_t> invalid_positions;
  for (size_t i = 0; i < count; ++i) classify(submitted[i], now, &invalid_positions);

  // A cached op that waits too long is sent to rank 0 the slow way, so the stall inspector sees it.
  if (cached_stall_seconds_ > 0) {
    for (const auto& kv : cached_waiting_) {
      if (now - kv.second.since >= cached_stall_seconds_) invalid_positions.push_back(kv.first);
    }
  }
  if (rank_ == 0) maybe_check_stalls(now);

  // Layout: [flags][shutdown: a bit per rank][joined: a bit per rank][invalid: a bit per cache
  // position] are OR-ed (sent inverted), then [ready: a bit per cache position] is AND-ed.
  const size_t rank_words = words_for(static_cast<size_t>(size_));
  const size_t cache_words = words_for(cache_.num_positions());
  const size_t shutdown_at = 1, joined_at = shutdown_at + rank_words, invalid_at = joined_at + rank_words,
               ready_at = invalid_at + cache_words;
  std::vector<uint64_t>& bits = bits_;
  bits.assign(ready_at + cache_words, 0);
  if (!uncached_.empty() || !stall_failures_.empty()) bits[0] |= kFlagUncached;
  if (want_shutdown) set_bit(bits, shutdown_at, static_cast<size_t>(rank_));
  if (joined_here_) set_bit(bits, joined_at, static_cast<size_t>(rank_));
  for (uint32_t pos : invalid_positions) set_bit(bits, invalid_at, pos);
  for (const auto& kv : cached_waiting_) set_bit(bits, ready_at, kv.first);
  for (size_t i = 0; i < ready_at; ++i) bits[i] = ~bits[i];

  // This rank's first small allreduce ready on the cache rides along (the same op on every rank, or
  // nothing is done by it).
  std::string& rider = rider_;
  if (rider_data_bytes_ > 0) {
    bool loaded = false;
    for (const auto& kv : cached_waiting_) {
      if (!load || !can_ride(cache_.get(kv.first), rider_data_bytes_)) continue;
      loaded = load(kv.first, cache_.get(kv.first), &rider);
      break;
    }
    if (!loaded) clear_rider(&rider);
  }
  Status s = rider_data_bytes_ > 0 ? channel_->allreduce_and(&bits, &rider, &combine_riders)
                                   : channel_->allreduce_and(&bits);
  if (!s.ok()) return s;
  for (size_t i = 0; i < ready_at; ++i) bits[i] = ~bits[i];

  for_each_bit(bits, shutdown_at, rank_words, [&](size_t r) { result->shutdown_ranks.push_back(static_cast<int>(r)); });
  if (!result->shutdown_ranks.empty()) {
    result->shutdown = true;
    return Status::OK();
  }
  for_each_bit(bits, joined_at, rank_words, [&](size_t r) { result->joined_ranks.push_back(static_cast<int>(r)); });
  anyone_joined_ = !result->joined_ranks.empty();
  if (anyone_joined_) {
    // Cached readiness means nothing while ranks are joined: every rank drops it alike and sends
    // what waited on the cache to rank 0.
    for (auto& kv : cached_waiting_) uncached_.push_back(std::move(kv.second));
    cached_waiting_.clear();
    std::fill(bits.begin() + static_cast<long>(ready_at), bits.end(), 0);
  }

  // Stale entries leave every cache at once; whatever waited on them here is renegotiated, in this
  // very cycle (every rank sees the same invalid bits, so every rank joins that negotiation).
  bool any_invalid = false;
  for_each_bit(bits, invalid_at, cache_words, [&](size_t pos) {
    any_invalid = true;
    auto it = cached_waiting_.find(static_cast<uint32_t>(pos));
    if (it != cached_waiting_.end()) {
      uncached_.push_back(std::move(it->second));
      cached_waiting_.erase(it);
    }
    cache_.erase(static_cast<uint32_t>(pos));
    bits[ready_at + pos / 64] &= ~(1ull << (pos % 64));
  });

  uint32_t rode = 0;
  const char* reduced = nullptr;
  const bool ridden = rider_data_bytes_ > 0 && rider_result(rider, &rode, &reduced);
  for_each_bit(bits, ready_at, cache_words, [&](size_t pos) {
    const uint32_t p = static_cast<uint32_t>(pos);
    if (ridden && p == rode) {
      result->ridden = true;
      result->ridden_response = cache_.get(p);
    } else {
      result->responses.push_back(cache_.get(p));
    }
    cache_.touch(p);
    stop_waiting_on_cache(p);
  });
  if (result->ridden) result->rider.assign(rider);

  if ((bits[0] & kFlagUncached) || any_invalid || anyone_joined_) {
    std::vector<Response> negotiated;
    s = negotiate(now, &negotiated);
    if (!s.ok()) return s;
    remember(negotiated);
    result->negotiated = true;
    for (Response& r : negotiated) {
      if (r.kind == OpKind::kJoin) joined_here_ = false;  // every rank has joined: take part again
      result->responses.push_back(std::move(r));
    }
  }
  return Status::OK();
}

Status Controller::negotiate(double now, std::vector<Response>* responses) {
  std::vector<Request> mine;
  mine.reserve(uncached_.size());
  for (Waiting& w : uncached_) {
    w.request.waited_seconds = now - w.since;
    mine.push_back(std::move(w.request));
  }
  uncached_.clear();

  std::vector<std::string> gathered;
  Status s = channel_->gather(encode_requests(mine), &gathered);
  if (!s.ok()) return s;

  std::string encoded;
  if (rank_ == 0) {
    for (int r = 0; r < size_; ++r) {
      std::vector<Request> requests;
      s = decode_requests(gathered[r], &requests);
      if (!s.ok()) return Status::Internal("from " + names_.rank(r) + ": " + s.message());
      for (const Request& q : requests) coordinator_->add(q, now);
    }
    std::vector<Response> ready = coordinator_->take_ready();
    for (Response& f : stall_failures_) ready.push_back(std::move(f));
    stall_failures_.clear();
    encoded = encode_responses(ready);
  }
  s = channel_->broadcast(&encoded);
  if (!s.ok()) return s;
  return decode_responses(encoded, responses);
}

void Controller::remember(const std::vector<Response>& responses) {
  if (cache_.capacity() == 0) return;
  for (const Response& r : responses) {
    // Responses shaped by joined ranks (and joins themselves) are one-offs.
    if (!r.ok() || r.kind == OpKind::kJoin || r.contributors != 0) continue;
    std::string evicted;
    const uint32_t pos = cache_.put(r, &evicted);
    // The evicted name's position now means another op: a request of ours waiting on it goes
    // to rank 0 at the next cycle instead.
    auto it = cached_waiting_.find(pos);
    if (!evicted.empty() && it != cached_waiting_.end()) {
      uncached_.push_back(std::move(it->second));
      cached_waiting_.erase(it);
    }
  }
}

void Controller::maybe_check_stalls(double now) {
  if (now - last_stall_check_ < kStallCheckInterval) return;
  last_stall_check_ = now;
  StallCheck check = coordinator_->check_stalls(now);
  if (!check.report.empty()) KOLO_LOG(kWarning, check.report);
  for (Response& f : check.failures) {
    KOLO_LOG(kError, f.error);
    stall_failures_.push_back(std::move(f));
  }
}

}  // namespace kolo
