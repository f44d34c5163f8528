// Process sets: subsets of the job's ranks with an engine of their own (negotiation, response cache,
// fusion, stall inspection) over communicators of their own (host-local and cross-host ones too, so
// hierarchical collectives work inside a set, and NCCL ones on GPUs), so a slow set never holds up
// another. Horovod's model: registering and removing are collective over the whole job, every rank
// passing the same arguments; ids count up from 1 in registration order, the same on every rank.
//
// Registration travels on the world's group for it (World::sets), on the caller's thread while the engines
// run on theirs, hence a world that allows that (MPI: MPI_THREAD_MULTIPLE). Each step that can fail on
// some ranks only is followed by an agreement, so a failure is every rank's, with the same message.
#include <algorithm>
#include <cstring>
#include <map>
#include <sstream>

#include "api/runtime.h"
#include "common/logging.h"
#include "common/ranks.h"

namespace kolo {
namespace {

std::string list(const std::vector<int>& ranks) {
  std::ostringstream s;
  s << '[';
  for (size_t i = 0; i < ranks.size(); ++i) s << (i ? ", " : "") << ranks[i];
  s << ']';
  return s.str();
}

// Every rank's vector of ints, over `group`.
Status gather_all(Group& group, const std::vector<int>& mine, std::vector<std::vector<int>>* all) {
  std::string bytes(mine.size() * sizeof(int), '\0');
  if (!mine.empty()) std::memcpy(&bytes[0], mine.data(), bytes.size());
  std::vector<std::string> each;
  Status s = group.allgather(bytes, &each, "agreeing on process sets");
  if (!s.ok()) return s;
  all->assign(each.size(), {});
  for (size_t r = 0; r < each.size(); ++r) {
    (*all)[r].resize(each[r].size() / sizeof(int));
    if (!each[r].empty()) std::memcpy((*all)[r].data(), each[r].data(), each[r].size());
  }
  return Status::OK();
}

// "" when every rank gave the same; else which ranks gave what, in a sentence.
std::string disagreement(const std::vector<std::vector<int>>& all, const char* what) {
  std::map<std::vector<int>, std::vector<int>> by_value;
  std::vector<std::vector<int>> order;
  for (size_t r = 0; r < all.size(); ++r) {
    auto& ranks = by_value[all[r]];
    if (ranks.empty()) order.push_back(all[r]);
    ranks.push_back(static_cast<int>(r));
  }
  if (order.size() == 1) return "";
  std::string out = std::string("the ranks passed different ") + what + ": ";
  for (size_t i = 0; i < order.size(); ++i) out += (i ? ", " : "") + list(order[i]) + " on " + ranks_phrase(by_value[order[i]]);
  return out;
}

// True on every rank when `ok` is true on every rank.
bool all_ok(Group& group, bool ok) {
  bool all = false;
  return group.all_true(ok, &all, "agreeing on a process set").ok() && all;
}

}  // namespace

// A set's timeline beside the job's: "t.json" -> "t.process_set_1.json".
std::string set_timeline_path(const std::string& path, int id) {
  const std::string tag = ".process_set_" + std::to_string(id);
  const size_t slash = path.find_last_of('/');
  const size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path + tag;
  return path.substr(0, dot) + tag + path.substr(dot);
}

Status Runtime::target(int id, FunctionRef<std::string()> what, Target* t) {
  std::lock_guard<std::mutex> lock(mu_);
  if (faults_.is_lost()) {
    const Status lost = faults_.lost();
    return Status(lost.code(), what() + ": " + lost.message());
  }
  if (!job()) {
    return Status::NotInitialized(what() + ": " +
                                  (shut_down_ ? "kolo has been shut down on this rank"
                                              : "kolo is not initialized: call init() first"));
  }
  auto it = id == 0 ? sets_.begin() : sets_.find(id);  // the job is the first entry (checked above)
  if (it == sets_.end()) {
    return Status::InvalidArgument(what() + " on rank " + std::to_string(job_rank_) + ": there is no process set " +
                                   std::to_string(id) + " (add_process_set makes one; removed sets are gone)");
  }
  if (!it->second.instance) {
    return Status::InvalidArgument(what() + " on rank " + std::to_string(job_rank_) +
                                   ": this rank is not in process set " + std::to_string(id) + " (ranks " +
                                   list(it->second.ranks) + ")");
  }
  t->engine = it->second.instance->engine;
  t->device = it->second.instance->device;
  // The job's ranks are its own: nothing to translate.
  if (id == 0) {
    t->ranks.clear();
  } else {
    t->ranks = it->second.ranks;
  }
  return Status::OK();
}

Status Runtime::add_process_set(std::vector<int> ranks, int* id) {
  std::lock_guard<std::mutex> one_at_a_time(sets_op_mu_);
  int rank = -1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!job()) return Status::NotInitialized("add_process_set: kolo is not initialized: call init() first");
    if (const Status lost = faults_.lost(); !lost.ok()) return Status(lost.code(), "add_process_set: " + lost.message());
    rank = job_rank_;
  }
  const std::string where = "add_process_set on rank " + std::to_string(rank) + ": ";
  if (!world_->threads_multiple(nullptr)) {
    // The same on every rank: they share one MPI library and one request.
    return Status::Unsupported(where + "process sets need MPI_THREAD_MULTIPLE (each set's engine runs MPI on a "
                                       "thread of its own); initialize MPI with it, or let kolo do so");
  }
  std::sort(ranks.begin(), ranks.end());
  std::vector<std::vector<int>> all;
  Status s = gather_all(world_->sets(), ranks, &all);
  if (!s.ok()) return Status(s.code(), where + s.message());
  std::string why = disagreement(all, "ranks");
  if (why.empty() && ranks.empty()) why = "a process set needs at least one rank";
  if (why.empty() && (ranks.front() < 0 || ranks.back() >= world_size_)) {
    why = "ranks " + list(ranks) + " are not all ranks of this job (0.." + std::to_string(world_size_ - 1) + ")";
  }
  if (why.empty() && std::adjacent_find(ranks.begin(), ranks.end()) != ranks.end()) {
    why = "ranks " + list(ranks) + " name a rank twice";
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& kv : sets_) {
      if (why.empty() && kv.first != 0 && kv.second.ranks == ranks) {
        why = "ranks " + list(ranks) + " already form process set " + std::to_string(kv.first);
      }
    }
    if (why.empty() && static_cast<int>(ranks.size()) == world_size_) {
      why = "ranks " + list(ranks) + " are the whole job: use the global process set (0)";
    }
  }
  if (!why.empty()) return Status::InvalidArgument(where + why);

  const bool member = std::binary_search(ranks.begin(), ranks.end(), rank);
  const int new_id = next_set_id_;
  std::shared_ptr<Instance> instance;
  InstanceStart start;
  s = world_->open_set_context(ranks, context_options(base_config_), &start.context);
  if (s.ok() && member) {
    start.id = new_id;
    start.ranks = ranks;
    start.config = base_config_;
    // KOLO_AUTOTUNE tunes the job's engine; a set's engine keeps the settings it starts with.
    start.config.autotune.enabled = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      start.timeline_path = timeline_path_;
      start.timeline_cycles = timeline_cycles_;
    }
    s = start_instance(std::move(start), &instance);
    if (s.ok()) {
      faults_.add_engine(instance->engine);
      const Topology& topo = instance->context->topology();
      KOLO_LOG(kInfo, "process set " << new_id << " " << list(ranks) << ": rank " << topo.rank << " of " << topo.size);
    }
  }
  if (!all_ok(world_->sets(), s.ok())) {
    stop_instance(instance);
    return Status::Internal(where + "process set " + list(ranks) + " could not start on every member" +
                            (s.ok() ? std::string() : ": " + s.message()));
  }
  std::lock_guard<std::mutex> lock(mu_);
  ProcessSet set;
  set.id = new_id;
  set.ranks = ranks;
  set.rank = member ? static_cast<int>(std::lower_bound(ranks.begin(), ranks.end(), rank) - ranks.begin()) : -1;
  set.instance = std::move(instance);
  sets_[new_id] = std::move(set);
  next_set_id_ = new_id + 1;
  *id = new_id;
  return Status::OK();
}

Status Runtime::remove_process_set(int id) {
  std::lock_guard<std::mutex> one_at_a_time(sets_op_mu_);
  int rank = -1;
  ProcessSet set;
  bool known = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!job()) return Status::NotInitialized("remove_process_set: kolo is not initialized: call init() first");
    if (const Status lost = faults_.lost(); !lost.ok()) {
      return Status(lost.code(), "remove_process_set: " + lost.message());
    }
    rank = job_rank_;
    auto it = sets_.find(id);
    if (it != sets_.end() && id != 0) {
      set = it->second;
      known = true;
    }
  }
  const std::string where = "remove_process_set on rank " + std::to_string(rank) + ": ";
  std::vector<std::vector<int>> all;
  Status s = gather_all(world_->sets(), {id}, &all);
  if (!s.ok()) return Status(s.code(), where + s.message());
  std::string why = disagreement(all, "process set ids");
  if (why.empty() && id == 0) why = "the global process set (0) cannot be removed";
  if (why.empty() && !known) why = "there is no process set " + std::to_string(id);
  if (!why.empty()) return Status::InvalidArgument(where + why);

  // Refused on every rank while a member still has ops of the set in flight (they would be lost).
  const int busy = set.instance && set.instance->engine->in_flight() > 0 ? 1 : 0;
  std::vector<std::vector<int>> flags;
  s = gather_all(world_->sets(), {busy}, &flags);
  if (!s.ok()) return Status(s.code(), where + s.message());
  std::vector<int> busy_ranks;
  for (size_t r = 0; r < flags.size(); ++r) {
    if (flags[r][0] != 0) busy_ranks.push_back(static_cast<int>(r));
  }
  if (!busy_ranks.empty()) {
    return Status::InvalidArgument(where + "process set " + std::to_string(id) + " still has ops in flight on " +
                                   ranks_phrase(busy_ranks) + "; wait for them before removing it");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    sets_.erase(id);
  }
  stop_instance(set.instance);
  return Status::OK();
}

Status Runtime::process_set(int id, std::vector<int>* ranks, int* rank) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!job()) return Status::NotInitialized("process set " + std::to_string(id) + ": kolo is not initialized");
  auto it = sets_.find(id);
  if (it == sets_.end()) return Status::InvalidArgument("there is no process set " + std::to_string(id));
  *ranks = it->second.ranks;
  *rank = it->second.rank;
  return Status::OK();
}

std::vector<int> Runtime::process_set_ids() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int> ids;
  for (const auto& kv : sets_) ids.push_back(kv.first);  // 0, the job, first while initialized
  return ids;
}

Status Runtime::start_timeline(const std::string& path, bool mark_cycles) {
  std::vector<std::pair<int, std::shared_ptr<Engine>>> engines;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!job()) return Status::NotInitialized("start_timeline: kolo is not initialized: call init() first");
    for (const auto& kv : sets_) {
      if (kv.second.instance) engines.emplace_back(kv.first, kv.second.instance->engine);
    }
  }
  for (const auto& [id, engine] : engines) {
    Status s = engine->start_timeline(id == 0 ? path : set_timeline_path(path, id), mark_cycles);
    if (!s.ok()) return s;
  }
  // Sets added from now on write theirs too.
  std::lock_guard<std::mutex> lock(mu_);
  timeline_path_ = path;
  timeline_cycles_ = mark_cycles;
  return Status::OK();
}

Status Runtime::stop_timeline() {
  std::vector<std::shared_ptr<Engine>> engines;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!job()) return Status::NotInitialized("stop_timeline: kolo is not initialized: call init() first");
    for (const auto& kv : sets_) {
      if (kv.second.instance) engines.push_back(kv.second.instance->engine);
    }
    timeline_path_.clear();
  }
  for (const auto& engine : engines) engine->stop_timeline();
  return Status::OK();
}

}  // namespace kolo
