#include "engine/executor.h"

#include <chrono>
#include <thread>
#include <utility>

#include "common/ranks.h"
#include "common/clock.h"
#include "common/logging.h"
#include "cpu/kernels.h"
#include "engine/fusion_planner.h"
#include "engine/rider.h"

namespace kolo {

// One fused group from launch until its work has ended.
struct Executor::Group {
  CollectiveCall call;
  std::vector<TensorEntry*> entries;            // per piece; null for a joined piece
  // Work left running owns its entries: their names leave the queue at launch, so that the next
  // step may submit them again while this one's device work ends.
  std::vector<std::unique_ptr<TensorEntry>> owned;
  std::vector<std::shared_ptr<void>> scratch;   // joined pieces' memory, kept until the work ends
  Collective* collective = nullptr;
  double agreed_at = 0.0;
  double started = 0.0;
  std::unique_ptr<PhaseLog> log;
  std::unique_ptr<Completion> completion;
  bool signals_end = false;  // its work fires the executor's signal as it ends
};

Executor::Executor(const CollectiveRegistry* registry, TensorQueue* queue, HandleTable* handles,
                   Timeline* timeline, int64_t fusion_threshold_bytes, int job_rank,
                   bool join_average_over_contributors, std::shared_ptr<WorkSignal> signal)
    : job_rank_(job_rank),
      join_average_over_contributors_(join_average_over_contributors),
      registry_(registry),
      queue_(queue),
      handles_(handles),
      timeline_(timeline),
      fusion_threshold_bytes_(fusion_threshold_bytes),
      signal_(std::move(signal)) {}

Executor::~Executor() = default;

void Executor::finish(std::unique_ptr<TensorEntry> entry, const Status& status, HandleTable* handles,
                      TensorQueue* spares) {
  // A local failure deferred until the collective was done (see allocate_output) is the op's.
  Status final_status = status.ok() ? entry->deferred_error : status;
  const int64_t handle = entry->handle;
  Output result = std::move(entry->result);
  if (spares != nullptr) spares->recycle(std::move(entry));
  handles->complete(handle, std::move(final_status), std::move(result));
}

namespace {

// An op submitted before the engine had a timeline was not stamped (TensorEntry::enqueued_at).
double enqueued_or(const TensorEntry& e, double agreed_at) { return e.enqueued_at > 0 ? e.enqueued_at : agreed_at; }

Piece piece_of(const TensorEntry& e) {
  Piece p;
  p.name = e.request.name;
  p.in = e.input.data;
  p.out = e.output.data;
  p.bytes = e.input.size_bytes();
  p.shape = e.input.shape;
  p.splits = e.splits;
  p.ready = e.ready_event;
  return p;
}

// What a joined rank takes part in an op with: no memory of its own (the collective gives it
// some), the agreed shape, no rows for an allgather.
bool joined_piece(const Response& r, Piece* p) {
  p->name = r.name;
  p->joined = true;
  p->shape = r.shape;
  switch (r.kind) {
    case OpKind::kAllreduce:
    case OpKind::kBroadcast:
      p->bytes = r.size_bytes();
      return true;
    case OpKind::kAllgather:
      p->shape[0] = 0;
      return true;
    case OpKind::kBarrier:
      p->shape.clear();
      return true;
    default:
      return false;
  }
}

}  // namespace

bool Executor::runs_on_caller(const std::vector<Response>& responses) const {
  int64_t bytes = 0;  // all of them: whatever fusion makes of them
  for (const Response& r : responses) {
    if (r.ok()) bytes += r.size_bytes();
  }
  for (const Response& r : responses) {
    if (!r.ok()) continue;  // ends here, without a collective
    const Collective* c = registry_->find(r.kind, r.device, r.reduce_op);
    if (c == nullptr || !c->gives_up_on_lost_peer(bytes)) return false;
  }
  return true;
}

void Executor::run(const std::vector<Response>& responses, double agreed_at, bool joined) {
  for (const FusionGroup& fused : plan_fusion(responses, fusion_threshold_bytes_)) {
    auto group = std::make_unique<Group>();
    group->agreed_at = agreed_at;
    bool have_device = false;
    for (size_t i : fused.members) {
      const Response& r = responses[i];
      TensorEntry* e = queue_->find(r.name);
      if (e == nullptr && r.ok() && joined) {
        Piece p;
        if (!joined_piece(r, &p)) {
          KOLO_LOG(kError, "a joined rank cannot take part in " << op_kind_name(r.kind) << " of tensor '" << r.name
                                                                << "'");
          continue;
        }
        group->call.pieces.push_back(std::move(p));
        group->entries.push_back(nullptr);
        continue;
      }
      if (e == nullptr) {
        // Only an error can name an op this rank never submitted (it failed on the ranks that did).
        if (r.ok()) KOLO_LOG(kError, "internal: response for '" << r.name << "', which this rank never submitted");
        continue;
      }
      if (timeline_ != nullptr) timeline_->span(r.name, "NEGOTIATE", enqueued_or(*e, agreed_at), agreed_at);
      if (!r.ok()) {
        if (timeline_ != nullptr) timeline_->instant(r.name, "ERROR", agreed_at, "{\"message\":" + Timeline::json_string(r.error) + "}");
        finish(queue_->remove(r.name), Status(r.error_code, r.error), handles_, queue_);
        continue;
      }
      if (!have_device) group->call.device = e->input.device;  // its ordinal too
      have_device = true;
      group->call.pieces.push_back(piece_of(*e));
      group->entries.push_back(e);
    }
    if (group->call.pieces.empty()) continue;
    const Response& first = responses[fused.members.front()];
    CollectiveCall& call = group->call;
    call.kind = first.kind;
    call.dtype = first.dtype;
    call.device.type = first.device;
    call.reduce_op = first.reduce_op;
    call.prescale = first.prescale;
    call.postscale = first.postscale;
    call.wire_dtype = wire_dtype(first.dtype, first.compression);
    // Joined ranks contribute the identity; an Average divides by every rank unless configured to
    // divide by those that contributed.
    call.contributors = join_average_over_contributors_ ? first.contributors : 0;
    call.root = first.root;
    call.shape = first.shape;
    call.first_dims = first.first_dims;
    launch(std::move(group));
  }
}

void Executor::finish_ridden(const Response& r, const std::string& rider, int size) {
  uint32_t position = 0;
  const char* reduced = nullptr;
  if (!rider_result(rider, &position, &reduced)) return;  // never: the controller found it whole
  std::unique_ptr<TensorEntry> e = queue_->remove(r.name);
  if (!e) return;
  if (timeline_ != nullptr) {
    const double agreed_at = steady_seconds();  // read only for a timeline: a small op counts each read
    timeline_->span(r.name, "NEGOTIATE", enqueued_or(*e, agreed_at), agreed_at);
    timeline_->instant(r.name, "REDUCED_WITH_NEGOTIATION", agreed_at);
  }
  scale_into(r.dtype, reduced, e->output.data, r.num_elements(), post_scaling(r.dtype, r.reduce_op, r.postscale, size));
  finish(std::move(e), Status::OK(), handles_, queue_);
}

void Executor::launch(std::unique_ptr<Group> owned) {
  Group& group = *owned;
  CollectiveCall& call = group.call;
  group.collective = registry_->find(call.kind, call.device.type, call.reduce_op);
  group.log = std::make_unique<PhaseLog>(call.pieces.size(), timeline_ != nullptr);
  call.allocate = [&group](size_t i, const std::vector<int64_t>& shape, const OwnMemory& own, void** data) {
    TensorEntry* e = group.entries[i];
    if (e != nullptr) {
      Status s = allocate_output(*e, shape, own);
      if (s.ok()) *data = e->output.data;
      return s;
    }
    std::shared_ptr<void> storage;
    Status s = own(num_elements(shape) * static_cast<int64_t>(dtype_size(group.call.dtype)), &storage);
    if (s.ok()) {
      *data = storage.get();
      group.scratch.push_back(std::move(storage));
    }
    return s;
  };
  group.started = steady_seconds();
  Status status;
  if (group.collective == nullptr) {
    status = Status::Unsupported(std::string("no collective in this build runs ") + op_kind_name(call.kind) +
                                 " on " + (call.device.type == DeviceType::kCPU ? "CPU" : "GPU") + " tensors (tensor '" +
                                 call.name() + "')");
  } else {
    status = group.collective->run(call, *group.log, &group.completion);
  }
  if (status.ok()) {
    // What the collective reported beyond the outputs is final once it has launched.
    for (TensorEntry* e : group.entries) {
      if (e == nullptr) continue;
      if (call.kind == OpKind::kAlltoall) e->result.received_splits = call.received_splits;
      if (call.kind == OpKind::kJoin) e->result.last_joined_rank = call.last_joined_rank;
    }
  }
  if (!status.ok()) {
    group.completion.reset();
    KOLO_LOG(kError, "collective for tensor '" << call.name() << "' failed: " << status.message());
  } else if (group.completion != nullptr) {
    // Device work: a caller may let its own stream wait for it from now on (wait_on_stream).
    if (std::shared_ptr<void> done = group.completion->done_event()) {
      for (TensorEntry* e : group.entries) {
        if (e != nullptr && e->deferred_error.ok()) handles_->launched(e->handle, done, e->result);
      }
    }
    for (size_t i = 0; i < call.pieces.size(); ++i) {
      group.owned.push_back(group.entries[i] != nullptr ? queue_->remove(call.pieces[i].name) : nullptr);
    }
    if (signal_) {
      // The callback holds the signal, not the executor: it may run after the engine is gone.
      group.signals_end = group.completion->wake_when_done([signal = signal_] { signal->fire(); });
    }
    if (!group.signals_end) ++unsignalled_count_;
    running_.push_back(std::move(owned));
    running_count_ = running_.size();
    return;
  }
  end(group, status);
}

void Executor::end(Group& group, const Status& status) {
  const CollectiveCall& call = group.call;
  if (timeline_ != nullptr) {
    if (group.completion != nullptr && status.ok()) group.completion->record_phases(*group.log);
    const std::string args = "{\"collective\":\"" + std::string(group.collective ? group.collective->name() : "none") +
                             "\",\"fused\":" + std::to_string(call.pieces.size()) + "}";
    for (size_t i = 0; i < call.pieces.size(); ++i) {
      const std::string& name = call.pieces[i].name;
      timeline_->span(name, "QUEUE", group.agreed_at, group.started);
      for (Phase p : {Phase::kPack, Phase::kCollective, Phase::kUnpack}) {
        const PhaseLog::Span& s = group.log->span(i, p);
        if (s.set) timeline_->span(name, phase_name(p), s.start, s.end, p == Phase::kCollective ? args : "");
      }
    }
  }
  for (size_t i = 0; i < call.pieces.size(); ++i) {
    TensorEntry* e = group.entries[i];
    if (e == nullptr) continue;  // a joined piece: nobody waits on it
    const std::string& name = call.pieces[i].name;
    // What MPI, NCCL or CUDA said, with the tensor and the rank it happened on.
    const Status mine =
        status.ok() ? status
                    : Status(status.code(), std::string(op_kind_name(call.kind)) + " of tensor '" + name + "' on " +
                                                rank_phrase(job_rank_) + ": " + status.message());
    finish(group.owned.empty() ? queue_->remove(name) : std::move(group.owned[i]), mine, handles_, queue_);
  }
}

void Executor::poll() {
  for (auto it = running_.begin(); it != running_.end();) {
    const std::optional<Status> status = (*it)->completion->poll();
    if (!status) {
      ++it;
      continue;
    }
    if (!status->ok()) {
      KOLO_LOG(kError, "collective for tensor '" << (*it)->call.name() << "' failed: " << status->message());
    }
    // Out of the running list before the callers wake: a caller that saw its op end must not find it
    // still counted in flight (remove_process_set asks).
    std::unique_ptr<Group> done = std::move(*it);
    it = running_.erase(it);
    running_count_ = running_.size();
    if (!done->signals_end) --unsignalled_count_;
    end(*done, *status);
  }
}

void Executor::drain(double seconds, const Status& why) {
  const double deadline = steady_seconds() + seconds;
  while (!running_.empty() && steady_seconds() < deadline) {
    poll();
    if (!running_.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (auto& group : running_) {
    std::optional<Status> status = group->completion->poll();  // ended meanwhile, or failed on its own
    if (!status) {
      group->completion->abort(why);
      status = group->completion->poll();  // its words for the abort, with why's code
      status = status && !status->ok() ? Status(why.code(), status->message()) : why;
    }
    end(*group, *status);
  }
  running_.clear();
  running_count_ = 0;
  unsignalled_count_ = 0;
}

}  // namespace kolo
