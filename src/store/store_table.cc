#include "store/store_table.h"

#include <algorithm>

namespace kolo {
namespace {

using tcp_store::QueryType;
using tcp_store::Request;

// A decimal integer as torch's servers read one (std::stoll: leading blanks, trailing bytes ignored); false
// where there is none, as where torch's server throws and drops the connection.
bool parse_counter(const std::string& text, int64_t* value) {
  try {
    *value = std::stoll(text);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// Two's-complement wrap-around, as torch's int64_t sum does in practice (without C++'s undefined overflow).
int64_t wrapping_sum(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

std::string one_byte(uint8_t b) { return std::string(1, static_cast<char>(b)); }

std::string i64_bytes(int64_t v) {
  std::string out;
  tcp_store::put_i64(&out, v);
  return out;
}

std::string value_bytes(const std::string& v) {
  std::string out;
  tcp_store::put_bytes(&out, v);
  return out;
}

std::string stop_waiting() { return one_byte(static_cast<uint8_t>(tcp_store::WaitReply::kStopWaiting)); }

}  // namespace

bool StoreTable::handle(uint64_t conn, const Request& r, Replies* replies) {
  switch (r.type) {
    case QueryType::kSet:
    case QueryType::kAppend:
    case QueryType::kMultiSet: return write(conn, r, replies);
    case QueryType::kCompareSet: compare_set(conn, r, replies); return true;
    case QueryType::kGet:
    case QueryType::kCheck:
    case QueryType::kGetNumKeys:
    case QueryType::kDeleteKey:
    case QueryType::kMultiGet:
    case QueryType::kPing:
    case QueryType::kListKeys: return read(conn, r, replies);
    case QueryType::kAdd:
    case QueryType::kBarrier: return count(conn, r, replies);
    case QueryType::kQueuePush:
    case QueryType::kQueuePop:
    case QueryType::kQueueLen: return queue(conn, r, replies);
    case QueryType::kWait:
    case QueryType::kCancelWait: return wait(conn, r, replies);
    case QueryType::kValidate:
    case QueryType::kKoloToken: return false;  // only a connection's first requests; the server's loop takes them
  }
  return false;
}

bool StoreTable::write(uint64_t conn, const Request& r, Replies* replies) {
  auto hold = [&](const std::string& key) {
    if (key.find(kHeldSegment) != std::string::npos) held_[key] = conn;
  };
  if (r.type == QueryType::kMultiSet) {
    for (size_t i = 0; i < r.keys.size(); ++i) {
      values_[r.keys[i]] = r.values[i];
      hold(r.keys[i]);
      released(r.keys[i], replies);
    }
    return true;
  }
  const std::string& key = r.keys[0];
  if (r.type == QueryType::kSet) {
    values_[key] = r.values[0];
  } else {
    values_[key] += r.values[0];
  }
  hold(key);
  released(key, replies);
  return true;
}

void StoreTable::compare_set(uint64_t conn, const Request& r, Replies* replies) {
  // torch's: a missing key is created only where `expected` is empty, and the reply for a missing key is
  // `expected` itself; an existing one is replaced where it equals `expected`; the reply is then the value
  // it holds.
  const std::string& key = r.keys[0];
  const std::string& expected = r.values[0];
  const std::string& desired = r.values[1];
  auto it = values_.find(key);
  if (it == values_.end()) {
    if (expected.empty()) {
      values_[key] = desired;
      released(key, replies);
      replies->emplace_back(conn, value_bytes(desired));
    } else {
      replies->emplace_back(conn, value_bytes(expected));
    }
    return;
  }
  if (it->second == expected) it->second = desired;
  replies->emplace_back(conn, value_bytes(it->second));
}

bool StoreTable::read(uint64_t conn, const Request& r, Replies* replies) {
  std::string out;
  switch (r.type) {
    case QueryType::kGet: {
      // torch's client waits for the key first; a key gone by then reads as empty (torch's libuv server).
      auto it = values_.find(r.keys[0]);
      out = value_bytes(it == values_.end() ? std::string() : it->second);
      break;
    }
    case QueryType::kCheck:
      out = one_byte(static_cast<uint8_t>(all_present(r.keys) ? tcp_store::CheckReply::kReady
                                                               : tcp_store::CheckReply::kNotReady));
      break;
    case QueryType::kGetNumKeys: out = i64_bytes(static_cast<int64_t>(values_.size())); break;
    case QueryType::kDeleteKey:
      held_.erase(r.keys[0]);
      out = i64_bytes(static_cast<int64_t>(values_.erase(r.keys[0])));
      break;
    case QueryType::kMultiGet:
      for (const std::string& k : r.keys) {
        auto it = values_.find(k);
        tcp_store::put_bytes(&out, it == values_.end() ? std::string() : it->second);
      }
      break;
    case QueryType::kPing: tcp_store::put_u32(&out, r.word); break;
    case QueryType::kListKeys:
      out = i64_bytes(static_cast<int64_t>(values_.size()));
      for (const auto& kv : values_) tcp_store::put_bytes(&out, kv.first);
      break;
    default: return false;
  }
  replies->emplace_back(conn, std::move(out));
  return true;
}

bool StoreTable::count(uint64_t conn, const Request& r, Replies* replies) {
  const std::string& key = r.keys[0];
  const bool barrier = r.type == QueryType::kBarrier;
  // ADD adds its number; BARRIER counts arrivals, and the last one releases the others and itself.
  int64_t sum = barrier ? 1 : r.number;
  auto it = values_.find(key);
  if (it != values_.end()) {
    int64_t old = 0;
    if (!parse_counter(it->second, &old)) return false;
    sum = wrapping_sum(old, sum);
  }
  values_[key] = std::to_string(sum);
  if (!barrier) {
    replies->emplace_back(conn, i64_bytes(sum));
    released(key, replies);
  } else if (sum >= r.number) {
    released(key, replies);
    replies->emplace_back(conn, stop_waiting());
  } else {
    await(conn, key);
  }
  return true;
}

bool StoreTable::queue(uint64_t conn, const Request& r, Replies* replies) {
  const std::string& key = r.keys[0];
  if (r.type == QueryType::kQueuePush) {
    queues_[key].push_back(r.values[0]);
    release_one(key, replies);
    return true;
  }
  if (r.type == QueryType::kQueueLen) {
    auto it = queues_.find(key);
    replies->emplace_back(conn, i64_bytes(it == queues_.end() ? 0 : static_cast<int64_t>(it->second.size())));
    return true;
  }
  // A pop: the length before it, then the value where there was one.
  auto& q = queues_[key];
  std::string out = i64_bytes(static_cast<int64_t>(q.size()));
  if (!q.empty()) {
    tcp_store::put_bytes(&out, q.front());
    q.pop_front();
  }
  if (q.empty()) queues_.erase(key);
  replies->emplace_back(conn, std::move(out));
  return true;
}

bool StoreTable::wait(uint64_t conn, const Request& r, Replies* replies) {
  if (r.type == QueryType::kCancelWait) {
    forget(conn);
    replies->emplace_back(conn, one_byte(static_cast<uint8_t>(tcp_store::WaitReply::kWaitCanceled)));
    return true;
  }
  if (all_present(r.keys)) {
    replies->emplace_back(conn, stop_waiting());
    return true;
  }
  for (const std::string& k : r.keys) {
    if (!present(k)) await(conn, k);
  }
  return true;
}

void StoreTable::closed(uint64_t conn) {
  forget(conn);
  for (auto it = held_.begin(); it != held_.end();) {
    if (it->second == conn) {
      values_.erase(it->first);
      it = held_.erase(it);
    } else {
      ++it;
    }
  }
}

void StoreTable::forget(uint64_t conn) {
  auto w = awaited_.find(conn);
  if (w == awaited_.end()) return;
  for (const std::string& k : w->second) {
    auto it = waiters_.find(k);
    if (it == waiters_.end()) continue;
    it->second.erase(std::remove(it->second.begin(), it->second.end(), conn), it->second.end());
    if (it->second.empty()) waiters_.erase(it);
  }
  awaited_.erase(w);
}

bool StoreTable::present(const std::string& k) const {
  if (values_.count(k) != 0) return true;
  auto q = queues_.find(k);
  return q != queues_.end() && !q->second.empty();
}

bool StoreTable::all_present(const std::vector<std::string>& keys) const {
  return std::all_of(keys.begin(), keys.end(), [this](const std::string& k) { return present(k); });
}

void StoreTable::await(uint64_t conn, const std::string& k) {
  if (awaited_[conn].insert(k).second) waiters_[k].push_back(conn);
}

void StoreTable::released(const std::string& k, Replies* replies) {
  auto it = waiters_.find(k);
  if (it == waiters_.end()) return;
  const std::vector<uint64_t> conns = std::move(it->second);
  waiters_.erase(it);
  for (uint64_t conn : conns) lose_key(conn, k, replies);
}

void StoreTable::release_one(const std::string& k, Replies* replies) {
  auto it = waiters_.find(k);
  if (it == waiters_.end()) return;
  const uint64_t conn = it->second.front();
  it->second.erase(it->second.begin());
  if (it->second.empty()) waiters_.erase(it);
  lose_key(conn, k, replies);
}

void StoreTable::lose_key(uint64_t conn, const std::string& k, Replies* replies) {
  auto w = awaited_.find(conn);
  if (w == awaited_.end()) return;
  w->second.erase(k);
  if (!w->second.empty()) return;
  awaited_.erase(w);
  replies->emplace_back(conn, stop_waiting());
}

}  // namespace kolo
