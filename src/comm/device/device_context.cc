#include "comm/device/device_context.h"

#include <chrono>
#include <thread>

#include "common/logging.h"

namespace kolo {

struct DeviceContext::EventPool {
  explicit EventPool(std::shared_ptr<DeviceBackend> b) : backend(std::move(b)) {}
  ~EventPool() {
    for (auto& kv : idle) {
      for (DeviceEvent e : kv.second) backend->destroy_event(e);
    }
  }

  static Status take(const std::shared_ptr<EventPool>& pool, int ordinal, bool timing, PooledEvent* out) {
    const auto key = std::make_pair(ordinal, timing);
    DeviceEvent e = nullptr;
    {
      std::lock_guard<std::mutex> lock(pool->mu);
      auto& v = pool->idle[key];
      if (!v.empty()) {
        e = v.back();
        v.pop_back();
      }
    }
    if (e == nullptr) {
      Status s = pool->backend->create_event(ordinal, timing, &e);
      if (!s.ok()) return s;
    }
    // The pool lives as long as any of its events, so an event may outlive kolo's engine (a
    // handle's done event, say).
    *out = PooledEvent(e, [pool, key](void* event) {
      std::lock_guard<std::mutex> lock(pool->mu);
      pool->idle[key].push_back(event);
    });
    return Status::OK();
  }

  std::shared_ptr<DeviceBackend> backend;
  std::mutex mu;
  std::map<std::pair<int, bool>, std::vector<DeviceEvent>> idle;
};

DeviceContext::DeviceContext(std::shared_ptr<DeviceBackend> backend, const Context& context)
    : backend_(std::move(backend)), context_(context), events_(std::make_shared<EventPool>(backend_)) {
  const std::string d = backend_->description();
  library_ = d.find("NCCL") != std::string::npos ? "NCCL" : "DEVICE";
}

DeviceContext::~DeviceContext() {
  // What is still queued ends (the engine drained or aborted its work before stopping).
  finish_work(10.0);
  for (auto& c : comms_) c.reset();
  if (stream_ != nullptr) backend_->destroy_stream(stream_);
}

bool DeviceContext::finish_work(double seconds, const std::function<void()>& while_waiting) {
  if (stream_ == nullptr) return true;
  PooledEvent last;
  bool done = false;
  if (event(false, &last).ok() && backend_->record(last.get(), stream_).ok()) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (backend_->query(last.get(), &done).ok() && !done && std::chrono::steady_clock::now() < deadline) {
      if (while_waiting) while_waiting();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  if (done) return true;
  // A stream that does not end within the bound has its communicators aborted, so that it can.
  for (auto& c : comms_) {
    if (c) c->abort();
  }
  return false;
}

Status DeviceContext::check_device(const Device& device) const {
  const int bound = ordinal_;
  if (bound < 0 || device.index < 0 || device.index == bound) return Status::OK();
  return Status::InvalidArgument("the tensor is on cuda:" + std::to_string(device.index) +
                                 ", but kolo drives one GPU per process and this process's first GPU op ran on cuda:" +
                                 std::to_string(bound) + " (pin one GPU per rank, e.g. by local rank)");
}

Status DeviceContext::ensure(const Device& device, const std::string& tensor) {
  if (!poisoned_.ok()) return poisoned_;
  if (ordinal_ >= 0) {
    Status s = check_device(device);
    return s.ok() ? s : Status(s.code(), "tensor '" + tensor + "': " + s.message());
  }
  const int ordinal = device.index >= 0 ? device.index : 0;
  Status s = backend_->bind(ordinal);
  if (s.ok()) s = backend_->create_stream(ordinal, &stream_);
  if (!s.ok()) return s;
  ordinal_ = ordinal;
  return Status::OK();
}

DeviceContext::OnBoundDevice::OnBoundDevice(DeviceContext& context) : backend_(context.backend()) {
  const int ordinal = context.ordinal();
  previous_ = backend_.bound();
  if (previous_ >= 0 && ordinal >= 0 && previous_ != ordinal) {
    status_ = backend_.bind(ordinal);
  } else {
    previous_ = -1;  // nothing to give back
  }
}

DeviceContext::OnBoundDevice::~OnBoundDevice() {
  if (previous_ >= 0) backend_.bind(previous_);
}

bool DeviceContext::launches_without_peers(const std::vector<Group>& groups) const {
  if (ordinal_ < 0 || !poisoned_.ok()) return false;
  for (Group g : groups) {
    if (!comms_[static_cast<int>(g)]) return false;  // made with collectives that wait on every member
  }
  return true;
}

Status DeviceContext::record_ready(const TensorView& view, PooledEvent* event) {
  Status s = check_device(view.device);
  if (s.ok()) s = EventPool::take(events_, view.device.index, false, event);
  if (s.ok()) s = backend_->record(event->get(), view.stream);
  return s;
}

Status DeviceContext::event(bool timing, PooledEvent* out) {
  return EventPool::take(events_, ordinal_ >= 0 ? ordinal_.load() : 0, timing, out);
}

Status DeviceContext::wait_ready(const CollectiveCall& call) {
  void* last = nullptr;
  for (const Piece& p : call.pieces) {
    if (p.ready == nullptr || p.ready == last) continue;
    Status s = backend_->wait(stream_, p.ready);
    if (!s.ok()) return s;
    last = p.ready;
  }
  return Status::OK();
}

Status DeviceContext::fusion_buffer(int64_t bytes, std::shared_ptr<void>* buffer) {
  if (!fusion_ || fusion_bytes_ < bytes) {
    // Grow to the next MiB, so that slowly growing groups do not reallocate every time.
    const int64_t want = (bytes + (1 << 20) - 1) / (1 << 20) * (1 << 20);
    std::shared_ptr<void> b;
    Status s = own_memory()(want, &b);
    if (!s.ok()) return s;
    fusion_ = std::move(b);
    fusion_bytes_ = want;
  }
  *buffer = fusion_;
  return Status::OK();
}

OwnMemory DeviceContext::own_memory() {
  std::shared_ptr<DeviceBackend> backend = backend_;
  const int ordinal = ordinal_ >= 0 ? ordinal_.load() : 0;
  return [backend, ordinal](int64_t bytes, std::shared_ptr<void>* out) {
    void* p = nullptr;
    Status s = backend->allocate(ordinal, bytes, &p);
    if (!s.ok()) return s;
    *out = std::shared_ptr<void>(p, [backend](void* q) { backend->free(q); });
    return Status::OK();
  };
}

FillIdentity DeviceContext::fill_identity() {
  return [this](DataType dtype, ReduceOp op, void* data, int64_t count) {
    return backend_->batched_copy({CopyPiece{nullptr, data, count}}, CopyTransform{dtype, dtype, 1.0, 1, op}, stream_);
  };
}

void DeviceContext::poison(const Status& why) {
  if (poisoned_.ok()) poisoned_ = Status(why.code(), "an earlier GPU collective failed: " + why.message());
}

void DeviceContext::abort_comms(const Status& why) {
  poison(why);
  for (auto& c : comms_) {
    if (c) c->abort();
  }
}

const char* DeviceContext::describe(Group group) {
  return group == Group::kWorld ? "the job" : group == Group::kLocal ? "this host" : "across hosts";
}

kolo::Group& DeviceContext::group(Group group) const {
  return group == Group::kWorld ? context_.data() : group == Group::kLocal ? context_.local() : context_.cross();
}

std::vector<int> DeviceContext::members(Group group) const {
  const Topology& t = context_.topology();
  const auto& hosts = context_.host_members();
  std::vector<int> ranks;
  if (group == Group::kWorld) {
    for (int r = 0; r < t.size; ++r) ranks.push_back(r);
  } else if (group == Group::kLocal) {
    ranks = hosts[static_cast<size_t>(t.cross_rank)];
  } else {
    for (const auto& host : hosts) {
      if (static_cast<int>(host.size()) > t.local_rank) ranks.push_back(host[static_cast<size_t>(t.local_rank)]);
    }
  }
  for (int& r : ranks) r = context_.job_rank(r);
  return ranks;
}

Status DeviceContext::adopt(Group group, std::unique_ptr<DeviceComm> comm) {
  const int rank = this->group(group).rank(), size = this->group(group).size();
  if (comm->size() != size || comm->rank() != rank) {
    comm->abort();
    return Status::Internal("a shrunk " + library_ + " communicator is rank " + std::to_string(comm->rank()) + " of " +
                            std::to_string(comm->size()) + ", its group of ranks rank " +
                            std::to_string(rank) + " of " + std::to_string(size));
  }
  comms_[static_cast<int>(group)] = std::move(comm);
  return Status::OK();
}

Status DeviceContext::comm(Group group, DeviceComm** out) {
  if (!poisoned_.ok()) return poisoned_;
  std::unique_ptr<DeviceComm>& slot = comms_[static_cast<int>(group)];
  if (slot) {
    *out = slot.get();
    return Status::OK();
  }
  kolo::Group& ranks = this->group(group);
  CommMembers members;
  members.rank = ranks.rank();
  members.size = ranks.size();
  members.mpi_comm = ranks.native_handle();
  members.job_ranks = this->members(group);
  // The group's first member makes the id; the others get it over the group.
  Status made = Status::OK();
  if (members.rank == 0) made = backend_->unique_id(&members.id);
  int32_t length = made.ok() ? static_cast<int32_t>(members.id.size()) : -1;
  Status sent = ranks.broadcast(&length, sizeof length, 0, "a GPU communicator's id");
  if (!sent.ok()) return sent;
  if (length < 0) {
    return made.ok() ? Status::Internal("the first rank of a GPU communicator could not make its id") : made;
  }
  members.id.resize(static_cast<size_t>(length));
  sent = ranks.broadcast(&members.id[0], length, 0, "a GPU communicator's id");
  if (!sent.ok()) return sent;
  std::unique_ptr<DeviceComm> c;
  Status s = backend_->create_comm(ordinal_, members, &c);
  if (!s.ok()) return s;
  KOLO_LOG(kDebug, "made a " << library_ << " communicator of " << members.size << " ranks (" << describe(group) << ")");
  slot = std::move(c);
  *out = slot.get();
  return Status::OK();
}

}  // namespace kolo
