// Whether the job's processes still answer, over MPI point-to-point on a communicator of its own:
// every rank sends rank 0 a heartbeat, rank 0 sends every rank one, and a peer silent for the timeout
// is lost (rank 0 then tells the others which). The heartbeats come from a thread of their own and
// need no progress of training or of kolo's engine, so what stops them is a process that cannot run
// at all (frozen by SIGSTOP, or swapped out for good) or a host that cannot be reached, exactly the
// cases where a collective would otherwise wait forever. A rank on its way out says goodbye first,
// so shutting down is never taken for a loss. Needs MPI_THREAD_MULTIPLE.
#pragma once

#include <mpi.h>

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/peer_watch.h"
#include "kolo/status.h"

namespace kolo {

class MpiPeerWatch : public PeerWatch {
 public:
  // Collective over `world` (duplicated, so the heartbeats never meet other traffic); the host names
  // travel once, now, for the messages.
  static Status start(MPI_Comm world, double timeout_seconds, OnLost on_lost, std::unique_ptr<MpiPeerWatch>* out);
  ~MpiPeerWatch() override { stop(); }

  // Says goodbye to the peers it watches and ends the thread. True: all its MPI requests are done and
  // the object may go. False (after a loss, or a goodbye that cannot leave): MPI still holds its
  // buffers, so the owner keeps the object to the process's end.
  bool stop() override;
  const std::string& host_of(int rank) const { return hosts_[static_cast<size_t>(rank)]; }

 private:
  enum Kind : int64_t { kBeat = 1, kBye = 2, kLost = 3 };
  struct Peer {
    int rank = 0;
    int64_t in[3] = {0, 0, 0};   // what arrives: kind, value, generation
    int64_t out[3] = {0, 0, 0};  // what goes
    MPI_Request recv = MPI_REQUEST_NULL;
    MPI_Request send = MPI_REQUEST_NULL;
    double last_heard = 0.0;
    bool gone = false;  // said goodbye
  };

  MpiPeerWatch(MPI_Comm comm, double timeout_seconds, int64_t generation, OnLost on_lost,
               std::vector<std::string> hosts);
  void loop();
  void receive(double now);
  void beat();
  void check(double now);
  // Whether the peer's last message has left, waiting for it until `until` (steady seconds).
  bool sent(Peer& p, double until);
  void post_receive(Peer& p);
  // Sends `kind` to a peer unless its last message is still on its way after `wait_seconds` (no
  // pile-up at a frozen one).
  void send(Peer& p, Kind kind, int64_t value, double wait_seconds = 0.0);
  void lose(const std::string& why);
  std::string who(int rank) const;

  MPI_Comm comm_;
  const int64_t generation_;  // this watch's, the same on every rank
  int rank_ = 0;
  const double timeout_;
  const double interval_;
  OnLost on_lost_;
  std::vector<std::string> hosts_;
  std::vector<Peer> peers_;  // rank 0: every other rank; the others: rank 0
  bool lost_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool clean_ = false;
  std::thread thread_;
};

}  // namespace kolo
