#include "tf_completion.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace kolo_tf {
namespace {

struct Pending {
  Finish finish;
  kolo_handle handle = 0;
  bool handle_known = false;     // set by the enqueuing thread, under the completer's mutex
  std::atomic<bool> fired{false};  // kolo called on_done (before it marks the handle done)
};

class Completer {
 public:
  static Completer& instance() {
    static Completer* c = new Completer();  // never destroyed: its thread may outlive static teardown
    return *c;
  }

  void fired(Pending* p) {
    std::lock_guard<std::mutex> lock(mu_);
    ready_.push_back(p);
    cv_.notify_all();
  }

  void known(Pending* p, kolo_handle h) {
    std::lock_guard<std::mutex> lock(mu_);
    p->handle = h;
    p->handle_known = true;
    cv_.notify_all();
  }

 private:
  Completer() { std::thread([this] { run(); }).detach(); }

  void run() {
    for (;;) {
      Pending* p = nullptr;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return !ready_.empty() && ready_.front()->handle_known; });
        p = ready_.front();
        ready_.pop_front();
      }
      finish(p);
    }
  }

 public:
  static void finish(Pending* p) {
    kolo_output* out = nullptr;
    const int32_t code = kolo_wait(p->handle, -1.0, &out);  // done already, or about to be
    const std::string message = code == KOLO_OK ? std::string() : std::string(kolo_last_error());
    p->finish(code, message, out);
    if (out != nullptr) kolo_output_free(out);
    delete p;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending*> ready_;
};

void on_done(void* data, int32_t /*code*/, const char* /*message*/) {
  auto* p = static_cast<Pending*>(data);
  p->fired.store(true);
  Completer::instance().fired(p);
}

}  // namespace

void submit(const std::function<int32_t(kolo_done_fn, void*, kolo_handle*)>& enqueue, Finish finish) {
  auto* p = new Pending;
  p->finish = std::move(finish);
  Completer& completer = Completer::instance();
  kolo_handle h = 0;
  const int32_t code = enqueue(&on_done, p, &h);
  if (code != KOLO_OK) {  // refused at once: no handle, no callback
    p->finish(code, kolo_last_error(), nullptr);
    delete p;
    return;
  }
  completer.known(p, h);
}

}  // namespace kolo_tf
