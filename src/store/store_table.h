// The store's contents and who waits for which keys: the semantics of torch's TCPStore server (libuv
// backend, torch 2.x), apart from sockets, so that kolo's server (tcp_store_server.h) answers torch's client
// as torch's own does. Connections are named by ids; replies go out as (id, bytes) in the order they are made.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "store/tcp_store_wire.h"

namespace kolo {

class StoreTable {
 public:
  using Replies = std::vector<std::pair<uint64_t, std::string>>;

  // Serves one request of connection `conn`. false: it cannot be served (ADD or BARRIER on a key that holds
  // no integer, or a handshake's query) and, as with torch's server, the connection is to be closed.
  bool handle(uint64_t conn, const tcp_store::Request& r, Replies* replies);
  // A closed (or cancelling) connection's waits.
  void forget(uint64_t conn);
  // A connection closed: its waits, and the held keys it set, go.
  void closed(uint64_t conn);

  // A key with this segment in its name ("kolo/job/1/held/live/3") lives as long as the connection that last
  // set it: a process's liveness that its end (killed, crashed) removes at once, where a heartbeat takes a
  // timeout to tell. An extension of kolo's server: torch's keeps such a key like any other, and whoever
  // reads it then learns nothing from its presence, only from its absence.
  static constexpr const char* kHeldSegment = "/held/";

 private:
  bool write(uint64_t conn, const tcp_store::Request& r, Replies* replies);
  bool read(uint64_t conn, const tcp_store::Request& r, Replies* replies);
  bool count(uint64_t conn, const tcp_store::Request& r, Replies* replies);
  bool queue(uint64_t conn, const tcp_store::Request& r, Replies* replies);
  bool wait(uint64_t conn, const tcp_store::Request& r, Replies* replies);
  void compare_set(uint64_t conn, const tcp_store::Request& r, Replies* replies);

  // A key counts as there where it holds a value or a queue that is not empty (as in torch's libuv server).
  bool present(const std::string& k) const;
  bool all_present(const std::vector<std::string>& keys) const;
  void await(uint64_t conn, const std::string& k);
  // `k` now holds a value: it no longer holds up anyone, and whoever waited for it alone goes on.
  void released(const std::string& k, Replies* replies);
  // A value pushed onto queue `k`: one waiter, the longest waiting, may take it.
  void release_one(const std::string& k, Replies* replies);
  void lose_key(uint64_t conn, const std::string& k, Replies* replies);

  std::unordered_map<std::string, std::string> values_;
  std::unordered_map<std::string, std::deque<std::string>> queues_;
  std::unordered_map<std::string, std::vector<uint64_t>> waiters_;          // key -> connections, oldest first
  std::unordered_map<uint64_t, std::unordered_set<std::string>> awaited_;  // connection -> keys it still waits for
  std::unordered_map<std::string, uint64_t> held_;                         // held key -> the connection that set it
};

}  // namespace kolo
