// One start of the Gloo world's connections: every rank connected to every other over Gloo's TCP transport
// (one gloo::rendezvous::Context), which every group of every instance (gloo_group.h) shares, each on slots
// of its own. Also what Gloo leaves to its user, done here once (docs/architecture.md, "The Gloo world"):
// - waits: Gloo's own time out by closing every connection, and cannot be polled; so every wait waits "for
//   ever" and is ended from outside: by the peer watch's loss or a failure in place (give-up), or by the
//   mesh breaking. A transfer cannot be cancelled, and a buffer destroyed with its transfer posted stalls
//   its connection: after any failure the mesh is broken (every connection closed, every wait ended, every
//   later call refused with the same status) and the buffers of unfinished transfers are kept until the
//   mesh goes.
// - identity: Gloo's connections carry no handshake: after connecting, each rank sends every other this
//   start's nonce and its rank, and a connection that does not answer as that rank fails the start.
// - SIGPIPE (Gloo writes to a dead peer's socket without MSG_NOSIGNAL) is ignored where the program left it
//   at its default, and Gloo's sockets are closed on exec, so that a child process keeps no dead peer's
//   connection open.
#pragma once

#include <gloo/rendezvous/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "comm/gloo/rendezvous.h"
#include "kolo/status.h"

namespace kolo {

class GlooMesh {
 public:
  // Collective over the start's ranks. `iface`: the interface to use (empty: the one this host reaches the
  // store through). `timeout_seconds` bounds the connecting; `peers_there` (may be empty), asked while it
  // waits on a peer, ends it early with its status where that is not OK (a peer known gone).
  static Status connect(const Rendezvous& rendezvous, const std::string& iface, double timeout_seconds,
                        std::shared_ptr<GlooMesh>* out, std::function<Status()> peers_there = nullptr);
  ~GlooMesh();
  GlooMesh(const GlooMesh&) = delete;
  GlooMesh& operator=(const GlooMesh&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // "rank 3 (host h2)", for messages.
  std::string who(int rank) const;

  // A transfer of this mesh's: posted, waited for, or buried. `what` names it in messages.
  Status post(bool send, int peer, uint64_t slot, char* data, size_t bytes, const char* what,
              std::unique_ptr<gloo::transport::UnboundBuffer>* out);
  Status wait(gloo::transport::UnboundBuffer& buffer, bool send, int peer, const char* what);
  // A buffer whose transfer did not finish: kept to the mesh's end (see above), and the mesh broken.
  void bury(std::unique_ptr<gloo::transport::UnboundBuffer> buffer, const char* why);

  // Every wait ends, every later call fails with `why` (the first break's), every connection closes. The
  // first break is reported (see report_failures_to) unless `report` is false (the report's own revoker).
  void break_with(const Status& why, bool report = true);
  // In place (comm/peer_failure.h): the first break is a peer's failure, reported to `report`, and the
  // mesh's calls fail with kPeersFailed from then on.
  void report_failures_to(std::function<void(const std::string& what)> report);
  // OK while the mesh works; else why not.
  Status broken() const;

 private:
  GlooMesh() = default;
  Status check_identities(const std::string& nonce);
  // Ends every wait and closes every connection; with mu_ held.
  void close_locked();

  int rank_ = 0, size_ = 1;
  std::vector<std::string> hosts_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
  mutable std::mutex mu_;
  Status broken_;
  bool closed_ = false;
  std::set<std::pair<gloo::transport::UnboundBuffer*, bool>> waiting_;  // (buffer, send)
  std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> buried_;
  int interrupter_ = 0;
  std::function<void(const std::string&)> report_;
};

}  // namespace kolo
