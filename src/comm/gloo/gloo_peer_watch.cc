#include "comm/gloo/gloo_peer_watch.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>

#include "common/clock.h"
#include "common/logging.h"
#include "store/tcp_store_client.h"

namespace kolo {
namespace {

std::string seconds_text(double s) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", s);
  return text;
}

}  // namespace

Status GlooPeerWatch::start(const Rendezvous& rendezvous, double timeout_seconds, OnLost on_lost,
                            std::unique_ptr<GlooPeerWatch>* out) {
  const double interval = std::min(1.0, timeout_seconds / 10);
  std::unique_ptr<TcpStoreClient> client;
  Status s = TcpStoreClient::connect(rendezvous.store_host, rendezvous.store_port, rendezvous.token,
                                     KeyValueStore::Clock::now() + std::chrono::seconds(30), &client);
  if (!s.ok()) return Status(s.code(), "the peer watch: " + s.message());
  // A call the store does not answer within a few beats counts as no answer.
  client->set_reply_timeout(std::chrono::milliseconds(static_cast<int64_t>(std::max(0.5, 3 * interval) * 1000)));
  int64_t beats = 0;
  s = client->add(rendezvous.prefix + "beat/" + std::to_string(rendezvous.rank), 1, &beats);
  if (!s.ok()) return Status(s.code(), "the peer watch: " + s.message());
  out->reset(new GlooPeerWatch(std::move(client), rendezvous, timeout_seconds, std::move(on_lost)));
  return Status::OK();
}

GlooPeerWatch::GlooPeerWatch(std::unique_ptr<KeyValueStore> store, const Rendezvous& rendezvous,
                             double timeout_seconds, OnLost on_lost)
    : store_(std::move(store)),
      prefix_(rendezvous.prefix),
      job_prefix_(rendezvous.job_prefix),
      rank_(rendezvous.rank),
      size_(rendezvous.size),
      hosts_(rendezvous.hosts),
      store_where_(store_->where()),
      timeout_(timeout_seconds),
      // Ten beats per timeout, at most one a second: a late one or two never look like a loss.
      interval_(std::min(1.0, timeout_seconds / 10)),
      on_lost_(std::move(on_lost)),
      counts_(static_cast<size_t>(rendezvous.size), -1),
      changed_(static_cast<size_t>(rendezvous.size), steady_seconds()),
      store_answered_(steady_seconds()),
      store_in_process_(rendezvous.store_in_process) {
  thread_ = std::thread([this] { loop(); });
}

std::string GlooPeerWatch::who(int rank) const {
  return "rank " + std::to_string(rank) + " (host " + hosts_[static_cast<size_t>(rank)] + ")";
}

std::string GlooPeerWatch::key(const std::string& what, int rank) const {
  return prefix_ + what + "/" + std::to_string(rank);
}

void GlooPeerWatch::lose(const std::string& why, bool store_answers) {
  if (lost_) return;
  lost_ = true;
  KOLO_LOG(kError, "peer lost: " << why);
  if (on_lost_) on_lost_(why);
  // Heard, once this rank's ops in flight have failed naming the loss: see stop().
  if (store_answers && rank_ != 0) store_->set(key("bye", rank_), "1");
}

bool GlooPeerWatch::round(double now) {
  int64_t n = 0;
  Status s = store_->add(key("beat", rank_), 1, &n);
  // Rank 0 reads every counter; the others rank 0's, and rank 0's word.
  for (int r = 0; s.ok() && r < size_ && !lost_; ++r) {
    if (r == rank_ || (rank_ != 0 && r != 0)) continue;
    s = store_->add(key("beat", r), 0, &n);
    if (!s.ok()) break;
    if (n != counts_[static_cast<size_t>(r)]) {
      counts_[static_cast<size_t>(r)] = n;
      changed_[static_cast<size_t>(r)] = now;
      continue;
    }
    const double silent = now - changed_[static_cast<size_t>(r)];
    if (silent < timeout_) continue;
    bool gone = false;
    s = store_->check({key("bye", r)}, &gone);
    if (!s.ok() || gone) continue;
    if (rank_ == 0) {
      // Rank 0 tells every other rank which peer went silent, so that each names the same one.
      s = store_->set(prefix_ + "lost", std::to_string(r) + " " + seconds_text(silent));
      lost_rank_ = r;
    }
    lose(who(r) + " sent no heartbeat for " + seconds_text(silent) + " s");
  }
  if (s.ok() && rank_ != 0 && !lost_) {
    bool said = false;
    s = store_->check({prefix_ + "lost"}, &said);
    std::string word;
    if (s.ok() && said) s = store_->get(prefix_ + "lost", KeyValueStore::Clock::now() + std::chrono::seconds(1), &word);
    if (s.ok() && said) {
      std::istringstream in(word);
      int r = -1;
      std::string silent;
      in >> r >> silent;
      if (r >= 0 && r < size_) lose(who(r) + " sent no heartbeat for " + silent + " s (seen by rank 0)");
    }
  }
  if (s.ok() && !lost_) {
    // kolorun --gloo passes on a SIGUSR1 (elastic: the hosts have room for more ranks) as a count.
    int64_t changed = 0;
    s = store_->add(job_prefix_ + "hosts_changed", 0, &changed);
    if (s.ok() && changed > hosts_changed_) ::kill(::getpid(), SIGUSR1);
    if (s.ok()) hosts_changed_ = changed;
  }
  if (s.ok() && !lost_) {
    bool ended = false;
    s = store_->check({job_prefix_ + "ended"}, &ended);
    std::string why;
    if (s.ok() && ended && store_->get(job_prefix_ + "ended", KeyValueStore::Clock::now() + std::chrono::seconds(1), &why).ok()) {
      KOLO_LOG(kError, "the job ends: " << why << " (its launcher says)");
      lost_ = true;
      ::kill(::getpid(), SIGTERM);
    }
  }
  if (s.ok()) {
    store_answered_ = now;
  } else if (now - store_answered_ >= timeout_ && !lost_) {
    lose("the job's store at " + store_where_ + " has not answered for " + seconds_text(now - store_answered_) +
             " s (" + s.message() + "): this rank is cut off from the others, or the store's host is lost",
         false);
  }
  return !lost_;
}

void GlooPeerWatch::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    lock.unlock();
    const bool going_on = round(steady_seconds());
    lock.lock();
    if (!going_on) break;
    cv_.wait_for(lock, std::chrono::duration<double>(interval_), [&] { return stopping_; });
  }
}

bool GlooPeerWatch::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !thread_.joinable()) return true;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // The goodbye: this rank's silence from now on is no loss.
  if (!lost_) store_->set(key("bye", rank_), "1");
  // The store ends with this process: after a loss, it serves until every survivor has read which peer was
  // lost (each says goodbye then), so that none takes the store's end for the loss and names the store
  // instead (bounded: a survivor that never reads it is cut off, and says so itself).
  if (lost_rank_ >= 0 && store_in_process_) {
    std::vector<std::string> byes;
    for (int r = 1; r < size_; ++r) {
      if (r != lost_rank_) byes.push_back(key("bye", r));
    }
    store_->wait(byes, KeyValueStore::Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(
                                                          std::min(10.0, timeout_ + 2 * interval_) * 1000)));
  }
  return true;
}

}  // namespace kolo
