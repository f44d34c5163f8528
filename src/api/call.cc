#include "api/call.h"

#include <map>
#include <mutex>
#include <utility>

#include "api/runtime.h"

namespace kolo {
namespace {

// Numbers unnamed calls of each kind in each process set: ranks that make them in the same order
// agree on the names (a rank outside a set makes none of its calls, so each set counts its own).
std::string name_or_auto(const std::string& name, OpKind kind, int process_set) {
  if (!name.empty()) return name;
  static std::mutex mu;
  static std::map<std::pair<int, int>, int64_t> counters;
  std::lock_guard<std::mutex> lock(mu);
  const int64_t n = counters[{process_set, static_cast<int>(kind)}]++;
  return std::string(op_kind_name(kind)) + ".noname." + (process_set ? std::to_string(process_set) + "." : "") +
         std::to_string(n);
}

thread_local ThreadCalls t_calls;

}  // namespace

CallScope::CallScope() : calls_(t_calls) {
  if (calls_.depth == calls_.calls.size()) calls_.calls.push_back(std::make_unique<Call>());
  call_ = calls_.calls[calls_.depth++].get();
}

CallScope::~CallScope() {
  call_->engine.reset();
  call_->device.reset();
  --calls_.depth;
}

Status begin(const std::string& name, OpKind kind, int process_set, Call* call) {
  Runtime& rt = Runtime::instance();
  if (name.empty()) {
    call->site.name = name_or_auto(name, kind, process_set);
  } else {
    call->site.name.assign(name);  // into the memory this thread's Call already has
  }
  call->site.kind = kind;
  call->site.rank = -1;
  call->process_set = process_set;
  Target t;
  t.ranks.swap(call->set_ranks);  // a set's ranks are assigned into memory this thread has already
  Status s = rt.target(
      process_set, [&] { return std::string(op_kind_name(kind)) + " of tensor '" + call->site.name + "'"; }, &t);
  if (!s.ok()) return s;
  call->engine = std::move(t.engine);
  call->device = std::move(t.device);
  call->set_ranks.swap(t.ranks);
  call->site.rank = call->engine->topology().rank;
  call->site.size = call->engine->topology().size;
  call->site.job_rank = call->set_ranks.empty() ? call->site.rank : call->set_ranks[call->site.rank];
  call->site.collectives = &call->engine->collectives();
  return Status::OK();
}


}  // namespace kolo
