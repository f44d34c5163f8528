// A Slurm allocation that kolorun runs inside (an sbatch script, an salloc shell). Open MPI's mpirun
// takes the allocation's hosts and slots from Slurm there, so kolorun passes no -H, -np defaults to
// the allocation's tasks, and more ranks than that are refused before anything starts.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "launch_options.h"

namespace kolo {
namespace launcher {

struct SlurmAllocation {
  std::string job_id;          // SLURM_JOB_ID
  std::string nodes;           // SLURM_JOB_NODELIST, as Slurm writes it ("node-[1-2]")
  std::string tasks_per_node;  // SLURM_TASKS_PER_NODE, as Slurm writes it ("2(x2)")
  int tasks = 0;               // their sum: the slots mpirun sees
};

// "2(x3),1" -> {2, 2, 2, 1}. False where it is not of that form.
bool parse_tasks_per_node(const std::string& text, std::vector<int>* tasks);

// Reads the allocation through `getenv`. False when there is none: no SLURM_JOB_ID (nor SLURM_JOBID,
// which is what mpirun looks for); or, with `error` set, when its SLURM_TASKS_PER_NODE is malformed.
bool find_slurm_allocation(const std::function<const char*(const char*)>& getenv, SlurmAllocation* out,
                           std::string* error);

// Settles -np: inside `allocation` (nullptr: none) with no -H or --hostfile, it defaults to the
// allocation's tasks and may not exceed them; elsewhere it is required, except in elastic mode. False,
// with the reason in `error`, when it cannot be settled.
bool settle_rank_count(const SlurmAllocation* allocation, LaunchOptions* options, std::string* error);

// Whether mpirun places the ranks by the allocation itself (kolorun then gives it no -H).
bool placed_by_slurm(const SlurmAllocation* allocation, const LaunchOptions& options);
// Whether the ranks would be placed by an allocation there is: no hosts given, not elastic. An allocation
// that cannot be read matters only then.
bool wants_allocation(const LaunchOptions& options);

}  // namespace launcher
}  // namespace kolo
