// The Gloo world's peer watch (comm/peer_watch.h), through the job's key-value store: every rank adds to a counter
// of its own there a few times per timeout, from a thread and a connection of the watch's own; rank 0 reads every
// counter, and a rank whose counter stands still for the timeout is lost: rank 0 says which under "lost", and every
// rank reads that (and watches rank 0's counter). A rank on its way out says goodbye first, and so does a rank that
// has heard of a loss (for a store that ends with rank 0's process). The store itself not answering for the timeout
// is a loss too: this rank is cut off from the job (it is the one left out), or the store's host is gone. A launcher
// that ends the job says so under the job's "ended" key (kolorun --gloo, when a rank failed or it was stopped): the
// rank then ends too, as one SIGTERM (a rank on another host is out of the launcher's reach); a SIGUSR1 the launcher
// passes on (elastic: the hosts have room for more ranks) under "hosts_changed" is raised here as SIGUSR1.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/gloo/rendezvous.h"
#include "comm/peer_watch.h"
#include "store/key_value_store.h"

namespace kolo {

class GlooPeerWatch : public PeerWatch {
 public:
  static Status start(const Rendezvous& rendezvous, double timeout_seconds, OnLost on_lost,
                      std::unique_ptr<GlooPeerWatch>* out);
  ~GlooPeerWatch() override { stop(); }
  bool stop() override;

 private:
  GlooPeerWatch(std::unique_ptr<KeyValueStore> store, const Rendezvous& rendezvous, double timeout_seconds,
                OnLost on_lost);
  void loop();
  // One round: this rank's beat, and what it watches. False once a loss is reported.
  bool round(double now);
  void lose(const std::string& why, bool store_answers = true);
  std::string who(int rank) const;
  std::string key(const std::string& what, int rank) const;

  std::unique_ptr<KeyValueStore> store_;
  const std::string prefix_;
  const std::string job_prefix_;
  const int rank_, size_;
  const std::vector<std::string> hosts_;
  const std::string store_where_;
  const double timeout_, interval_;
  OnLost on_lost_;
  std::vector<int64_t> counts_;      // last seen, by rank
  std::vector<double> changed_;      // when last seen to change
  double store_answered_ = 0;        // when the store last answered
  int64_t hosts_changed_ = 0;        // the launcher's count of SIGUSR1s passed on, as last read
  const bool store_in_process_;      // rank 0 serves the store (and it ends with this process)
  bool lost_ = false;
  int lost_rank_ = -1;               // the peer rank 0 said was lost
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace kolo
