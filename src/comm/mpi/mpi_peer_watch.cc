#include "comm/mpi/mpi_peer_watch.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "common/clock.h"
#include "common/logging.h"
#include "comm/mpi/mpi_fault.h"
#include "comm/mpi/mpi_status.h"

namespace kolo {
namespace {

constexpr int kTag = 7;

std::string seconds_text(double s) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", s);
  return text;
}

}  // namespace

Status MpiPeerWatch::start(MPI_Comm world, double timeout_seconds, OnLost on_lost,
                           std::unique_ptr<MpiPeerWatch>* out) {
  int size = 0;
  MPI_Comm_size(world, &size);
  char name[MPI_MAX_PROCESSOR_NAME] = {0};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  std::vector<char> all(static_cast<size_t>(size) * MPI_MAX_PROCESSOR_NAME, 0);
  KOLO_MPI_RETURN_IF_ERROR(MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME,
                                         MPI_CHAR, world),
                           "MPI_Allgather (host names for the peer watch)");
  std::vector<std::string> hosts;
  for (int r = 0; r < size; ++r) {
    const char* h = &all[static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME];
    hosts.emplace_back(h, strnlen(h, MPI_MAX_PROCESSOR_NAME));
  }
  // MPI reuses a freed communicator's id, and a goodbye that reached this rank after its previous
  // watch stopped listening waits unmatched under that id: each watch's messages carry a generation
  // agreed by every rank, and the next one ignores what an earlier one left behind.
  static int64_t last_generation = 0;
  int64_t generation = last_generation + 1;
  KOLO_MPI_RETURN_IF_ERROR(MPI_Allreduce(MPI_IN_PLACE, &generation, 1, MPI_INT64_T, MPI_MAX, world),
                           "MPI_Allreduce (peer watch generation)");
  last_generation = generation;
  MPI_Comm comm = MPI_COMM_NULL;
  KOLO_MPI_RETURN_IF_ERROR(MPI_Comm_dup(world, &comm), "MPI_Comm_dup (peer watch)");
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  track_comm(comm);  // revoked with kolo's others when a peer fails (ULFM)
  out->reset(new MpiPeerWatch(comm, timeout_seconds, generation, std::move(on_lost), std::move(hosts)));
  return Status::OK();
}

MpiPeerWatch::MpiPeerWatch(MPI_Comm comm, double timeout_seconds, int64_t generation, OnLost on_lost,
                           std::vector<std::string> hosts)
    : comm_(comm),
      generation_(generation),
      timeout_(timeout_seconds),
      // Ten heartbeats per timeout, at most one a second: a late one or two never look like a loss.
      interval_(std::min(1.0, timeout_seconds / 10)),
      on_lost_(std::move(on_lost)),
      hosts_(std::move(hosts)) {
  MPI_Comm_rank(comm_, &rank_);
  const int size = static_cast<int>(hosts_.size());
  const double now = steady_seconds();
  for (int r = 0; r < size; ++r) {
    if (r == rank_ || (rank_ != 0 && r != 0)) continue;
    Peer p;
    p.rank = r;
    p.last_heard = now;
    peers_.push_back(p);
  }
  for (Peer& p : peers_) post_receive(p);
  thread_ = std::thread([this] { loop(); });
}

std::string MpiPeerWatch::who(int rank) const {
  return "rank " + std::to_string(rank) + " (host " + hosts_[static_cast<size_t>(rank)] + ")";
}

bool MpiPeerWatch::sent(Peer& p, double until) {
  while (p.send != MPI_REQUEST_NULL) {
    int done = 0;
    MPI_Test(&p.send, &done, MPI_STATUS_IGNORE);
    if (done) break;
    if (steady_seconds() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

void MpiPeerWatch::post_receive(Peer& p) { MPI_Irecv(p.in, 3, MPI_INT64_T, p.rank, kTag, comm_, &p.recv); }

void MpiPeerWatch::send(Peer& p, Kind kind, int64_t value, double wait_seconds) {
  if (!sent(p, steady_seconds() + wait_seconds)) return;
  p.out[0] = kind;
  p.out[1] = value;
  p.out[2] = generation_;
  KOLO_LOG(kTrace, "peer watch: sending " << kind << " to rank " << p.rank);
  const int rc = MPI_Isend(p.out, 3, MPI_INT64_T, p.rank, kTag, comm_, &p.send);
  if (rc != MPI_SUCCESS && !p.gone) lose(who(p.rank) + " cannot be reached: " + mpi_status(rc, "MPI_Isend").message());
}

void MpiPeerWatch::receive(double now) {
  for (Peer& p : peers_) {
    while (p.recv != MPI_REQUEST_NULL && !lost_) {
      int done = 0;
      if (MPI_Test(&p.recv, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || !done) break;
      const int64_t kind = p.in[0], value = p.in[1];
      if (p.in[2] != generation_) {  // left by an earlier watch: not this peer's word
        post_receive(p);
        continue;
      }
      p.last_heard = now;
      KOLO_LOG(kTrace, "peer watch: heard " << kind << " from rank " << p.rank);
      if (kind == kBye) {
        p.gone = true;
        break;
      }
      if (kind == kLost) {
        // Rank 0 saw `value` go silent (value: its rank; the silence in milliseconds follows).
        const int lost = static_cast<int>(value & 0xffffffff);
        const double silent = static_cast<double>(value >> 32) / 1000.0;
        lose(who(lost) + " sent no heartbeat for " + seconds_text(silent) + " s (seen by rank 0)");
        break;
      }
      post_receive(p);
    }
  }
}

void MpiPeerWatch::beat() {
  for (Peer& p : peers_) {
    if (!p.gone && !lost_) send(p, kBeat, 0);
  }
}

void MpiPeerWatch::check(double now) {
  for (Peer& p : peers_) {
    if (p.gone || lost_) continue;
    const double silent = now - p.last_heard;
    if (silent < timeout_) continue;
    if (rank_ == 0) {
      // Rank 0 tells every other rank which peer went silent, so that each names the same one.
      const int64_t ms = static_cast<int64_t>(silent * 1000);
      for (Peer& q : peers_) {
        if (q.rank != p.rank && !q.gone) send(q, kLost, (ms << 32) | p.rank, 0.5);
      }
    }
    lose(who(p.rank) + " sent no heartbeat for " + seconds_text(silent) + " s");
  }
}

void MpiPeerWatch::lose(const std::string& why) {
  if (lost_) return;
  lost_ = true;
  KOLO_LOG(kError, "peer lost: " << why);
  if (on_lost_) on_lost_(why);
}

void MpiPeerWatch::loop() {
  // Polls the heartbeats a few times per interval: each poll is a handful of MPI_Test calls.
  const double poll = interval_ / 4;
  double next_beat = 0.0;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_ && !lost_) {
    lock.unlock();
    const double now = steady_seconds();
    receive(now);
    if (now >= next_beat) {
      beat();
      next_beat = now + interval_;
    }
    check(now);
    lock.lock();
    cv_.wait_for(lock, std::chrono::duration<double>(poll), [&] { return stopping_; });
  }
}

bool MpiPeerWatch::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return clean_;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (lost_) return false;  // requests stay posted: a lost peer will never match them
  if (comm_revoked(comm_)) {
    // A peer failed in place: every survivor's watch stops at once, and nothing more goes over this one.
    release_comm(&comm_);
    clean_ = true;
    return true;
  }
  for (Peer& p : peers_) {
    if (!p.gone) send(p, kBye, 0, 0.5);
  }
  // Goodbyes are 24 bytes, sent eagerly: they leave at once unless the peer is unreachable, and
  // nothing waits on one for longer than a second.
  const double until = steady_seconds() + 1.0;
  for (Peer& p : peers_) {
    if (!sent(p, until)) return false;  // an unreachable peer: its request keeps this object's memory
    if (p.recv != MPI_REQUEST_NULL) {
      MPI_Cancel(&p.recv);
      MPI_Wait(&p.recv, MPI_STATUS_IGNORE);
    }
  }
  release_comm(&comm_);
  clean_ = true;
  return true;
}

}  // namespace kolo
