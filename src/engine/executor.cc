#include "engine/executor.h"

#include "common/clock.h"
#include "common/logging.h"
#include "engine/fusion_planner.h"

namespace kolo {

Executor::Executor(const CollectiveRegistry* registry, TensorQueue* queue, HandleTable* handles,
                   Timeline* timeline, int64_t fusion_threshold_bytes, int rank)
    : rank_(rank),
      registry_(registry),
      queue_(queue),
      handles_(handles),
      timeline_(timeline),
      fusion_threshold_bytes_(fusion_threshold_bytes) {}

void Executor::finish(std::unique_ptr<TensorEntry> entry, const Status& status, HandleTable* handles) {
  // A local failure deferred until the collective was done (see allocate_output) is the op's.
  const Status& final_status = status.ok() ? entry->deferred_error : status;
  if (entry->on_done) entry->on_done(final_status);
  handles->complete(entry->handle, final_status, std::move(entry->result));
}

void Executor::run(const std::vector<Response>& responses, double agreed_at, bool joined) {
  for (const FusionGroup& group : plan_fusion(responses, fusion_threshold_bytes_)) {
    std::vector<Task> tasks;
    tasks.reserve(group.members.size());
    stand_ins_.clear();
    for (size_t i : group.members) {
      const Response& r = responses[i];
      TensorEntry* e = queue_->find(r.name);
      if (e == nullptr && r.ok() && joined) {
        std::unique_ptr<TensorEntry> stand_in;
        Status s = make_stand_in(r, rank_, &stand_in);
        if (!s.ok()) {
          KOLO_LOG(kError, s.message());
          continue;
        }
        stand_ins_.push_back(std::move(stand_in));
        tasks.push_back(Task{&r, stand_ins_.back().get()});
        continue;
      }
      if (e == nullptr) {
        // Only an error can name an op this rank never submitted (it failed on the ranks that did).
        if (r.ok()) KOLO_LOG(kError, "internal: response for '" << r.name << "', which this rank never submitted");
        continue;
      }
      if (timeline_ != nullptr) timeline_->span(r.name, "NEGOTIATE", e->enqueued_at, agreed_at);
      if (!r.ok()) {
        if (timeline_ != nullptr) timeline_->instant(r.name, "ERROR", agreed_at, "{\"message\":" + Timeline::json_string(r.error) + "}");
        finish(queue_->remove(r.name), Status(r.error_code, r.error), handles_);
        continue;
      }
      tasks.push_back(Task{&r, e});
    }
    if (!tasks.empty()) run_group(tasks, agreed_at);
  }
}

void Executor::run_group(const std::vector<Task>& tasks, double agreed_at) {
  const Response& first = *tasks[0].response;
  Collective* collective = registry_->find(first);
  Status status;
  PhaseLog log(tasks.size(), timeline_ != nullptr);
  const double start = steady_seconds();
  if (collective == nullptr) {
    status = Status::Unsupported(std::string("no collective in this build runs ") + op_kind_name(first.kind) + " on " +
                                 (first.device == DeviceType::kCPU ? "CPU" : "GPU") + " tensors (tensor '" +
                                 first.name + "')");
  } else {
    status = collective->run(tasks, log);
  }
  if (!status.ok()) {
    KOLO_LOG(kError, "collective for tensor '" << first.name << "' failed: " << status.message());
  }
  if (timeline_ != nullptr) {
    const std::string args = "{\"collective\":\"" + std::string(collective ? collective->name() : "none") +
                             "\",\"fused\":" + std::to_string(tasks.size()) + "}";
    for (size_t i = 0; i < tasks.size(); ++i) {
      const std::string& name = tasks[i].response->name;
      timeline_->span(name, "QUEUE", agreed_at, start);
      for (Phase p : {Phase::kPack, Phase::kCollective, Phase::kUnpack}) {
        const PhaseLog::Span& s = log.span(i, p);
        if (s.set) timeline_->span(name, phase_name(p), s.start, s.end, p == Phase::kCollective ? args : "");
      }
    }
  }
  for (const Task& t : tasks) finish_task(t, status);
}

void Executor::finish_task(const Task& t, const Status& status) {
  if (t.entry->handle == 0) return;  // a stand-in: nobody waits on it
  finish(queue_->remove(t.response->name), status, handles_);
}

}  // namespace kolo
