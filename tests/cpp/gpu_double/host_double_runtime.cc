// The host double's CUDA runtime part: streams as worker threads, events, "device" memory and its
// copies, the batched copy. Its communicators (NCCL's part) are in host_double_comm.cc.
#include "gpu_double/host_double.h"

#include <mpi.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <thread>
#include <vector>

#include "cuda/batch_math.h"

namespace kolo {
namespace testing {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

// ---- Streams and events -----------------------------------------------------------------------

struct HostDouble::Stream {
  Stream() : thread([this] { run(); }) {}
  ~Stream() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stopping = true;
    }
    cv.notify_all();
    thread.join();
  }
  void push(std::function<void()> f) {
    {
      std::lock_guard<std::mutex> lock(mu);
      work.push_back(std::move(f));
    }
    cv.notify_all();
  }
  void run() {
    while (true) {
      std::function<void()> f;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return stopping || !work.empty(); });
        if (work.empty()) return;  // stopping, and everything queued has run
        f = std::move(work.front());
        work.pop_front();
      }
      f();
    }
  }

  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> work;
  bool stopping = false;
  std::thread thread;
};

struct HostDouble::Event {
  void reach(uint64_t generation) {
    // Notified under the lock: a waiter that sees the event done may destroy it at once, so the
    // stream must be finished with it by then.
    std::lock_guard<std::mutex> lock(mu);
    if (generation > reached) {
      reached = generation;
      at = now_seconds();
    }
    cv.notify_all();
  }
  void wait_for(uint64_t generation) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return reached >= generation; });
  }

  std::mutex mu;
  std::condition_variable cv;
  uint64_t recorded = 0;  // generation of the last record
  uint64_t reached = 0;   // the last generation a stream has reached
  double at = 0.0;        // when
};

HostDouble::HostDouble() = default;
HostDouble::~HostDouble() = default;

Status HostDouble::usable() {
  int initialized = 0, level = 0;
  MPI_Initialized(&initialized);
  if (!initialized) return Status::Unsupported("the host double needs MPI to be initialized");
  MPI_Query_thread(&level);
  if (level < MPI_THREAD_MULTIPLE) {
    return Status::Unsupported("the host double runs MPI on its stream threads and needs MPI_THREAD_MULTIPLE");
  }
  return Status::OK();
}

HostDouble::Stream* HostDouble::stream_of(DeviceStream s) {
  if (s != nullptr) return static_cast<Stream*>(s);
  std::lock_guard<std::mutex> lock(mu_);
  if (!default_stream_) default_stream_ = std::make_unique<Stream>();
  return default_stream_.get();
}

void HostDouble::enqueue(DeviceStream stream, std::function<void()> work) { stream_of(stream)->push(std::move(work)); }

Status HostDouble::create_stream(int, DeviceStream* stream) {
  *stream = new Stream();
  return Status::OK();
}

void HostDouble::destroy_stream(DeviceStream stream) { delete static_cast<Stream*>(stream); }

Status HostDouble::create_event(int, bool, DeviceEvent* event) {
  *event = new Event();
  return Status::OK();
}

void HostDouble::destroy_event(DeviceEvent event) { delete static_cast<Event*>(event); }

Status HostDouble::record(DeviceEvent event, DeviceStream stream) {
  Event* e = static_cast<Event*>(event);
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(e->mu);
    generation = ++e->recorded;
  }
  stream_of(stream)->push([e, generation] { e->reach(generation); });
  return Status::OK();
}

Status HostDouble::wait(DeviceStream stream, DeviceEvent event) {
  Event* e = static_cast<Event*>(event);
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(e->mu);
    generation = e->recorded;
  }
  if (generation == 0) return Status::OK();  // never recorded: nothing to wait for, as in CUDA
  stream_of(stream)->push([e, generation] { e->wait_for(generation); });
  return Status::OK();
}

Status HostDouble::query(DeviceEvent event, bool* done) {
  ++queries_;
  Event* e = static_cast<Event*>(event);
  std::lock_guard<std::mutex> lock(e->mu);
  *done = e->reached >= e->recorded;
  return Status::OK();
}

Status HostDouble::host_callback(DeviceStream stream, std::function<void()> callback) {
  stream_of(stream)->push([this, callback = std::move(callback)] {
    ++host_callbacks_run_;  // before: whoever the callback wakes may read it at once
    callback();
  });
  return Status::OK();
}

Status HostDouble::synchronize(DeviceEvent event) {
  Event* e = static_cast<Event*>(event);
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(e->mu);
    generation = e->recorded;
  }
  e->wait_for(generation);
  return Status::OK();
}

Status HostDouble::elapsed(DeviceEvent start, DeviceEvent end, double* seconds) {
  Event* a = static_cast<Event*>(start);
  Event* b = static_cast<Event*>(end);
  std::lock_guard<std::mutex> la(a->mu);
  std::lock_guard<std::mutex> lb(b->mu);
  if (a->reached < a->recorded || b->reached < b->recorded || a->recorded == 0 || b->recorded == 0) {
    return Status::Internal("host double: elapsed() between events that have not completed");
  }
  *seconds = b->at - a->at;
  return Status::OK();
}

// ---- Memory -----------------------------------------------------------------------------------

Status HostDouble::allocate(int, int64_t bytes, void** data) {
  const size_t rounded = (static_cast<size_t>(bytes > 0 ? bytes : 1) + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (p == nullptr) return Status::Internal("host double: out of memory for " + std::to_string(bytes) + " bytes");
  std::lock_guard<std::mutex> lock(mu_);
  allocations_[static_cast<const char*>(p)] = bytes;
  *data = p;
  return Status::OK();
}

void HostDouble::free(void* data) {
  if (data == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    allocations_.erase(static_cast<const char*>(data));
  }
  std::free(data);
}

size_t HostDouble::live_allocations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return allocations_.size();
}

bool HostDouble::is_device_memory(const void* data, int64_t bytes) const {
  const char* p = static_cast<const char*>(data);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = allocations_.upper_bound(p);
  if (it == allocations_.begin()) return false;
  --it;
  return p >= it->first && p + bytes <= it->first + (it->second > 0 ? it->second : 1);
}

Status HostDouble::check_device(const void* data, int64_t bytes, const std::string& what) const {
  if (bytes == 0 || is_device_memory(data, bytes)) return Status::OK();
  return Status::InvalidArgument("host double: " + what + " is not device memory (" + std::to_string(bytes) +
                                 " bytes at " + std::to_string(reinterpret_cast<uintptr_t>(data)) + ")");
}

Status HostDouble::copy(void* dst, const void* src, int64_t bytes, DeviceStream stream) {
  if (bytes == 0) return Status::OK();
  Stream* s = stream_of(stream);
  const bool device_to_device = is_device_memory(src, bytes) && is_device_memory(dst, bytes);
  auto done = std::make_shared<Event>();
  s->push([dst, src, bytes, done] {
    std::memcpy(dst, src, static_cast<size_t>(bytes));
    done->reach(1);
  });
  // As cudaMemcpyAsync with pageable host memory: the call returns once the host side is done with.
  if (!device_to_device) done->wait_for(1);
  return Status::OK();
}

void HostDouble::note_launch() {
  std::lock_guard<std::mutex> lock(mu_);
  last_launch_thread_ = std::this_thread::get_id();
}

std::thread::id HostDouble::last_launch_thread() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_launch_thread_;
}

Status HostDouble::batched_copy(const std::vector<CopyPiece>& pieces, const CopyTransform& t, DeviceStream stream) {
  for (size_t i = 0; i < pieces.size(); ++i) {
    const CopyPiece& p = pieces[i];
    Status s = check_device(p.dst, p.count * static_cast<int64_t>(dtype_size(t.to)),
                            "the destination of batched copy piece " + std::to_string(i));
    if (s.ok() && p.src != nullptr) {
      s = check_device(p.src, p.count * static_cast<int64_t>(dtype_size(t.from)),
                       "the source of batched copy piece " + std::to_string(i));
    }
    if (!s.ok()) return s;
  }
  ++batched_copies_;
  stream_of(stream)->push([pieces, t] {
    Status s = batch::batched_copy_on_host(pieces, t);
    if (!s.ok()) std::fprintf(stderr, "host double: batched copy failed: %s\n", s.message().c_str());
  });
  return Status::OK();
}

}  // namespace testing
}  // namespace kolo
