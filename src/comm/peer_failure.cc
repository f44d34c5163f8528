#include "comm/peer_failure.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "common/logging.h"

namespace kolo {
namespace {

struct Registry {
  std::mutex mu;
  std::function<void(const std::string&)> hook;
  std::function<void()> revoke;
  bool reported = false;
  bool survived = false;  // some failure was reported to the hook: this process outlived a peer
  int hooks_running = 0;
  std::condition_variable hooks_done;
};

// `reported` and whether a hook is set, read without the lock by waits that poll them: outside the
// registry, which is made at its first use, so that a wait's look allocates nothing and takes no lock.
std::atomic<bool> g_pending{false};
std::atomic<uint64_t> g_reported{0};
std::atomic<bool> g_hooked{false};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: engine threads may report at exit
  return *r;
}

}  // namespace

void set_peer_failure_hook(std::function<void(const std::string&)> hook) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.hook = std::move(hook);
  g_hooked.store(static_cast<bool>(r.hook), std::memory_order_release);
}

void set_peer_failure_revoker(std::function<void()> revoke) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.revoke = std::move(revoke);
}

bool surviving_peer_failures() { return g_hooked.load(std::memory_order_acquire); }

bool outlived_a_peer() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.survived;
}

void report_peer_failure(const std::string& what) {
  Registry& r = registry();
  std::function<void(const std::string&)> hook;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    if (r.reported || !r.hook) return;
    r.reported = true;
    g_pending.store(true, std::memory_order_release);
    g_reported.fetch_add(1, std::memory_order_release);
    r.survived = true;
    // Every survivor's waits return now, wherever they wait (negotiation, data, a host's or the hosts'
    // group, the peer watch): none is left waiting on the lost rank.
    if (r.revoke) r.revoke();
    hook = r.hook;
    ++r.hooks_running;
  }
  KOLO_LOG(kWarning, "a peer failed (" << what << "): kolo's communicators are revoked; the survivors go on in place");
  std::thread([hook, what] {
    hook(what);
    Registry& reg = registry();
    std::lock_guard<std::mutex> lock(reg.mu);
    --reg.hooks_running;
    reg.hooks_done.notify_all();
  }).detach();
}

void wait_for_failure_hooks() {
  Registry& r = registry();
  std::unique_lock<std::mutex> lock(r.mu);
  r.hooks_done.wait(lock, [&] { return r.hooks_running == 0; });
}

void rearm_peer_failure() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.reported = false;
  g_pending.store(false, std::memory_order_release);
}

bool peer_failure_pending() { return g_pending.load(std::memory_order_acquire); }

uint64_t peer_failures_reported() { return g_reported.load(std::memory_order_acquire); }

}  // namespace kolo
