#include "slurm_allocation.h"

#include <cctype>
#include <cstdlib>

namespace kolo {
namespace launcher {
namespace {

// A positive count at text[*at], moving past it.
bool read_count(const std::string& text, size_t* at, int* out) {
  size_t end = *at;
  while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
  if (end == *at || end - *at > 6) return false;
  *out = std::atoi(text.substr(*at, end - *at).c_str());
  *at = end;
  return *out > 0;
}

}  // namespace

bool parse_tasks_per_node(const std::string& text, std::vector<int>* tasks) {
  tasks->clear();
  size_t at = 0;
  while (true) {
    int count = 0, repeat = 1;
    if (!read_count(text, &at, &count)) return false;
    if (text.compare(at, 2, "(x") == 0) {
      at += 2;
      if (!read_count(text, &at, &repeat) || at >= text.size() || text[at] != ')') return false;
      ++at;
    }
    tasks->insert(tasks->end(), static_cast<size_t>(repeat), count);
    if (at == text.size()) return true;
    if (text[at] != ',') return false;
    ++at;
  }
}

bool find_slurm_allocation(const std::function<const char*(const char*)>& getenv, SlurmAllocation* out,
                           std::string* error) {
  auto first = [&getenv](const char* a, const char* b) -> std::string {
    const char* v = getenv(a);
    if (v == nullptr) v = getenv(b);
    return v ? v : "";
  };
  SlurmAllocation a;
  a.job_id = first("SLURM_JOB_ID", "SLURM_JOBID");
  if (a.job_id.empty()) return false;
  a.nodes = first("SLURM_JOB_NODELIST", "SLURM_NODELIST");
  const char* tasks_per_node = getenv("SLURM_TASKS_PER_NODE");
  if (tasks_per_node == nullptr) {
    *error = "inside Slurm job " + a.job_id + ", SLURM_TASKS_PER_NODE is not set: cannot tell how many ranks the "
             "allocation holds";
    return false;
  }
  a.tasks_per_node = tasks_per_node;
  std::vector<int> tasks;
  if (!parse_tasks_per_node(a.tasks_per_node, &tasks)) {
    *error = "inside Slurm job " + a.job_id + ", SLURM_TASKS_PER_NODE='" + a.tasks_per_node +
             "' is not of Slurm's form (2(x3),1): cannot tell how many ranks the allocation holds";
    return false;
  }
  // As mpirun counts: one entry a node, as many nodes as the allocation has.
  const std::string nodes = first("SLURM_JOB_NUM_NODES", "SLURM_NNODES");
  const size_t num_nodes = nodes.empty() ? tasks.size() : static_cast<size_t>(std::atoi(nodes.c_str()));
  for (size_t i = 0; i < tasks.size() && i < num_nodes; ++i) a.tasks += tasks[i];
  *out = a;
  return true;
}

bool wants_allocation(const LaunchOptions& o) { return o.hosts.empty() && !o.elastic(); }

bool placed_by_slurm(const SlurmAllocation* allocation, const LaunchOptions& o) {
  return allocation != nullptr && wants_allocation(o);
}

bool settle_rank_count(const SlurmAllocation* allocation, LaunchOptions* o, std::string* error) {
  if (placed_by_slurm(allocation, *o)) {
    if (o->num_proc == 0) o->num_proc = allocation->tasks;
    if (o->num_proc > allocation->tasks) {
      *error = "-np " + std::to_string(o->num_proc) + " is more than the " + std::to_string(allocation->tasks) +
               " tasks of Slurm job " + allocation->job_id + " (SLURM_TASKS_PER_NODE=" + allocation->tasks_per_node +
               " on " + allocation->nodes + "); nothing was started. Ask Slurm for more (sbatch -n), or give -np " +
               std::to_string(allocation->tasks) + " or less";
      return false;
    }
    return true;
  }
  if (o->num_proc == 0 && !o->elastic()) {
    *error = "-np N is required (inside a Slurm allocation it defaults to the allocation's tasks)";
    return false;
  }
  return true;
}

}  // namespace launcher
}  // namespace kolo
