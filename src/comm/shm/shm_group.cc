#include "comm/shm/shm_group.h"

#include "comm/shm/shared_futex.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

namespace kolo {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

std::atomic<uint64_t>& ShmGroup::flag_of(int rank, Flag flag) const {
  ShmFlags* f = layout_.flags(segment_->base(), rank);
  return flag == Flag::kArrived ? f->arrived : flag == Flag::kReduced ? f->reduced : f->done;
}

std::atomic<uint32_t>& ShmGroup::sleepers_of(int rank, Flag flag) const {
  return layout_.flags(segment_->base(), rank)->sleepers[static_cast<int>(flag)];
}

ShmGroup::ShmGroup(std::unique_ptr<SharedSegment> segment, ShmLayout layout, int rank, ShmWaitPolicy* policy)
    : segment_(std::move(segment)),
      layout_(layout),
      rank_(rank),
      policy_(policy),
      oversubscribed_(layout.ranks() > static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN))) {
  inputs_.resize(static_cast<size_t>(layout_.ranks()));
}

void ShmGroup::publish_pid() { layout_.flags(segment_->base(), rank_)->pid = getpid(); }

void ShmGroup::start_watching() {
  std::vector<pid_t> pids(static_cast<size_t>(size()));
  for (int r = 0; r < size(); ++r) pids[static_cast<size_t>(r)] = layout_.flags(segment_->base(), r)->pid;
  liveness_ = std::make_unique<PeerLiveness>(pids, rank_);
}

Status ShmGroup::fail(Status s) {
  broken_ = s;
  return s;
}

// A sleeper counts itself, then reads the flag, then sleeps only while the flag still holds what it read
// (the futex's own check, in the kernel). No fence between this store and the count's read, which would
// cost every round of every op: where the two cross (the count read before the sleeper's is visible, the
// flag read before this store is), the futex's check almost always finds the flag raised by then, and
// otherwise the sleeper sleeps out its nap, as every wait did before the wake.
void ShmGroup::raise(Flag flag) const {
  std::atomic<uint64_t>& f = flag_of(rank_, flag);
  f.store(round_, std::memory_order_release);
  if (sleepers_of(rank_, flag).load(std::memory_order_relaxed) != 0) shared_futex_wake(&f);
}

Status ShmGroup::wait_for(int peer, Flag flag) {
  const std::atomic<uint64_t>& a = flag_of(peer, flag);
  // The round that last used this round's slots: rounds 1 and 2 have none.
  if (flag == Flag::kDone && round_ < 3) return Status::OK();
  const uint64_t want = flag == Flag::kDone ? round_ - 2 : round_;
  // A peer on its way arrives within the spins: the ranks of a round all started it, so the wait is
  // as long as the slowest rank's copy. One descheduled, or held up by the framework's threads on a
  // full machine, is yielded to, then slept for in its flag's futex until it raises the flag, in naps
  // between which the wait checks that the peer still runs.
  // More ranks than cores: the peer waited for is likely not running, and spinning keeps it from its core.
  const int spins = oversubscribed_ ? 16 : 256;
  for (int i = 0; i < spins; ++i) {
    if (a.load(std::memory_order_acquire) >= want) return Status::OK();
    cpu_relax();
  }
  policy_->progress();
  using clock = std::chrono::steady_clock;
  const bool control = pace_ == ShmPace::kControl;
  const auto spin_for = std::chrono::microseconds(oversubscribed_ ? 0 : control ? 20 : 10);
  const auto yield_for = control ? std::chrono::microseconds(50) : std::chrono::microseconds(2000);
  // A nap ends at the peer's raise: its length bounds only how often the checks below run.
  const auto max_nap = naps_.count() > 0 ? naps_ : std::chrono::microseconds(control ? 1000 : 200);
  const auto start = clock::now();
  auto nap = naps_.count() > 0 ? naps_ : std::chrono::microseconds(20);
  for (uint64_t i = 1;; ++i) {
    if (a.load(std::memory_order_acquire) >= want) return Status::OK();
    const auto waited = clock::now() - start;
    if (i % 64 == 0) policy_->progress();
    if (waited < spin_for) {
      cpu_relax();
      continue;
    }
    if (i % 32 == 0 || waited >= yield_for) {
      Status s = policy_->interrupted();
      if (!s.ok()) return s;
      if (liveness_ && liveness_->ended(peer)) return policy_->peer_ended(peer, liveness_->pid(peer));
    }
    if (waited < yield_for) {
      sched_yield();
      continue;
    }
    std::atomic<uint32_t>& sleepers = sleepers_of(peer, flag);
    sleepers.fetch_add(1, std::memory_order_seq_cst);
    const uint64_t seen = a.load(std::memory_order_seq_cst);
    if (seen < want) shared_futex_wait(&a, static_cast<uint32_t>(seen), nap);
    sleepers.fetch_sub(1, std::memory_order_relaxed);
    nap = std::min(nap * 2, max_nap);
  }
}

Status ShmGroup::wait_all(Flag flag) {
  for (int peer = 0; peer < size(); ++peer) {
    if (peer == rank_) continue;
    Status s = wait_for(peer, flag);
    if (!s.ok()) return fail(s);
  }
  return Status::OK();
}

Status ShmGroup::begin_round() {
  if (!broken_.ok()) return broken_;
  policy_->progress();
  ++round_;
  return wait_all(Flag::kDone);
}

int64_t ShmGroup::Pieces::rounds() const {
  const int64_t largest = block_count(count, size, 0);
  return largest == 0 ? 0 : (largest + q - 1) / q;
}

int64_t ShmGroup::Pieces::start(int block, int64_t round) const { return block_start(count, size, block) + round * q; }

int64_t ShmGroup::Pieces::length(int block, int64_t round) const {
  const int64_t left = block_count(count, size, block) - round * q;
  return left <= 0 ? 0 : std::min(left, q);
}

ShmGroup::Pieces ShmGroup::pieces(int64_t count, size_t elem) const {
  const int64_t per_slot = static_cast<int64_t>(layout_.slot_bytes() / elem);
  return Pieces{count, elem, size(), std::max<int64_t>(1, per_slot / size())};
}

}  // namespace kolo
