// Surviving a lost peer in place: the first loss reported (by a transport's failed call, the host's shared
// memory seeing a peer's process end, a GPU library's error, or the peer watch) is made known to every
// wait of kolo's at once by the world's revoker (ULFM revokes kolo's MPI communicators; the Gloo world
// closes its links), then handed to the runtime's hook on a thread of its own, which fails every op with
// kPeersFailed until the survivors have recovered. Without a hook (the job ends on a loss) nothing here is
// active. Process-wide: a transport's error handler carries no user data, and the waits that must see
// the loss run on threads that hold no reference to the runtime (docs/architecture.md).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace kolo {

// In every kPeersFailed message, so that a framework that keeps only the message (TensorFlow turns its
// ops' errors into InternalError) still tells a roll-back from a failure.
constexpr const char* kPeersFailedWords = "a peer failed: the survivors roll back to their last commit";

// The runtime's, set while the job survives failures in place; called once per failure, after the revoker,
// on a thread of its own (the thread that saw the failure may hold the caller's locks).
void set_peer_failure_hook(std::function<void(const std::string& what)> hook);
// The world's: what makes every pending wait of kolo's return at the first report. Called under the
// registry's lock: it must not block.
void set_peer_failure_revoker(std::function<void()> revoke);
bool surviving_peer_failures();
// Whether this process has survived a peer's failure in place (since it started).
bool outlived_a_peer();
// A failure seen (`what` names it): revokes and calls the hook, the first time since the last recovery.
void report_peer_failure(const std::string& what);
// Waits until the hook of every failure reported so far has returned (before recovering from it).
void wait_for_failure_hooks();
// After a recovery: the next failure is reported again.
void rearm_peer_failure();
// Whether a failure has been reported and not yet recovered from: cheap, for waits that must end as the
// revoked transport's calls do.
bool peer_failure_pending();
// How many failures have been reported since the process started: a wait that began before a report can
// tell that one came, recovered from or not.
uint64_t peer_failures_reported();

}  // namespace kolo
