#include "comm/device/device_work.h"

#include <algorithm>

#include "comm/peer_failure.h"
#include "common/clock.h"

namespace kolo {
namespace {

// In place (ULFM), a communicator's error is taken for a lost peer (NCCL says no more than that a
// peer closed its connection or timed out): the world revokes kolo's communicators, so every survivor
// hears of it, and the op fails to be rolled back. Recovery agrees on who is left (the shrink keeps
// every rank still alive, should the error have had another cause).
Status as_peer_failure(const Status& error, const std::string& library) {
  if (!surviving_peer_failures()) return error;
  report_peer_failure("a " + library + " collective failed: " + error.message());
  return Status::PeersFailed(error.message() + " (" + kPeersFailedWords + ")");
}

}  // namespace

DeviceWork::DeviceWork(DeviceContext& context, bool timed) : context_(context), timed_(timed) {}

Status DeviceWork::begin() {
  if (!timed_) return Status::OK();
  Status s = context_.event(true, &start_);
  if (s.ok()) s = context_.backend().record(start_.get(), context_.stream());
  return s;
}

Status DeviceWork::mark(Phase ended) {
  if (!timed_) return Status::OK();
  PooledEvent e;
  Status s = context_.event(true, &e);
  if (s.ok()) s = context_.backend().record(e.get(), context_.stream());
  if (s.ok()) marks_.emplace_back(ended, std::move(e));
  return s;
}

void DeviceWork::uses(DeviceComm* comm) {
  if (std::find(comms_.begin(), comms_.end(), comm) == comms_.end()) comms_.push_back(comm);
}

Status DeviceWork::launch() {
  Status s = context_.event(false, &done_);
  if (s.ok()) s = context_.backend().record(done_.get(), context_.stream());
  return s;
}

Status DeviceWork::fail(const Status& why) {
  failed_ = why;
  // A communicator that met an error may hold work that never ends: stop it, so that nothing
  // writes to the callers' memory any more, and use none of them again. A peer lost in place is
  // the exception: recover_in_place shrinks these communicators to the survivors (which stops this
  // work; an aborted one could not be shrunk) or aborts them, and waits for kolo's stream to end.
  if (!(why.code() == StatusCode::kPeersFailed && surviving_peer_failures())) {
    for (DeviceComm* c : comms_) c->abort();
  }
  context_.poison(why);
  return failed_;
}

std::optional<Status> DeviceWork::poll() {
  if (!failed_.ok()) return failed_;
  // The communicators first: work whose communicator failed may still reach its done event (NCCL's
  // kernels return once it is aborted), with nothing reduced.
  for (DeviceComm* c : comms_) {
    Status s = c->async_error();
    if (!s.ok()) return fail(as_peer_failure(s, context_.library()));
  }
  bool done = false;
  Status s = context_.backend().query(done_.get(), &done);
  if (!s.ok()) return fail(s);
  if (done) {
    ended_at_ = steady_seconds();
    return Status::OK();
  }
  return std::nullopt;
}

void DeviceWork::record_phases(PhaseLog& log) {
  if (!timed_ || marks_.empty()) return;
  // The device measured the spans; they are placed so that the last ends when kolo saw the work end
  // (within one engine cycle of the truth).
  double total = 0.0;
  if (!context_.backend().elapsed(start_.get(), marks_.back().second.get(), &total).ok()) return;
  const double origin = ended_at_ - total;
  double from = 0.0;
  for (const auto& m : marks_) {
    double to = 0.0;
    if (!context_.backend().elapsed(start_.get(), m.second.get(), &to).ok()) return;
    log.record_all(m.first, origin + from, origin + to);
    from = to;
  }
}

void DeviceWork::abort(const Status& why) {
  if (failed_.ok()) fail(why.code() == StatusCode::kPeersFailed ? why : Status::Aborted(why.message()));
}

bool DeviceWork::wake_when_done(const std::function<void()>& wake) {
  // Behind the done event on the same stream: once it runs, poll() finds the event done.
  return done_ && context_.backend().host_callback(context_.stream(), wake).ok();
}

}  // namespace kolo
