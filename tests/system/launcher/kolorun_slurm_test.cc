// kolorun inside a Slurm allocation: its tasks, and the ranks placed on them.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>

#include "kolorun_test_support.h"
#include "launch_options.h"
#include "mpirun_command.h"
#include "slurm_allocation.h"

namespace kolo {
namespace launcher {
namespace {

// An environment of SLURM_* variables, as sbatch -N 2 -n 4 gives its script.
std::function<const char*(const char*)> slurm_env(std::map<std::string, std::string> vars) {
  auto env = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [env](const char* name) -> const char* {
    auto it = env->find(name);
    return it == env->end() ? nullptr : it->second.c_str();
  };
}

const std::map<std::string, std::string> kFourTasksOnTwoNodes = {
    {"SLURM_JOB_ID", "42"}, {"SLURM_JOB_NODELIST", "node-[1-2]"}, {"SLURM_TASKS_PER_NODE", "2(x2)"},
    {"SLURM_JOB_NUM_NODES", "2"}};

TEST(KolorunSlurm, TasksPerNodeInSlurmsForm) {
  std::vector<int> tasks;
  ASSERT_TRUE(parse_tasks_per_node("2(x3),1", &tasks));
  EXPECT_EQ(tasks, (std::vector<int>{2, 2, 2, 1}));
  ASSERT_TRUE(parse_tasks_per_node("4", &tasks));
  EXPECT_EQ(tasks, std::vector<int>{4});
  for (const char* bad : {"", "x", "2(x)", "2(x2", "2,", "0", "2(y2)", "-1", "2;1"}) {
    EXPECT_FALSE(parse_tasks_per_node(bad, &tasks)) << bad;
  }
}

TEST(KolorunSlurm, FindsTheAllocationAndItsTasks) {
  SlurmAllocation a;
  std::string error;
  EXPECT_FALSE(find_slurm_allocation(slurm_env({}), &a, &error));
  EXPECT_EQ(error, "");
  ASSERT_TRUE(find_slurm_allocation(slurm_env(kFourTasksOnTwoNodes), &a, &error));
  EXPECT_EQ(a.job_id, "42");
  EXPECT_EQ(a.nodes, "node-[1-2]");
  EXPECT_EQ(a.tasks_per_node, "2(x2)");
  EXPECT_EQ(a.tasks, 4);
  // Uneven (sbatch -n 3 on 2 nodes of 2 CPUs), and the older names mpirun reads as well.
  ASSERT_TRUE(find_slurm_allocation(
      slurm_env({{"SLURM_JOBID", "7"}, {"SLURM_NODELIST", "a,b"}, {"SLURM_TASKS_PER_NODE", "2,1"}}), &a, &error));
  EXPECT_EQ(a.job_id, "7");
  EXPECT_EQ(a.nodes, "a,b");
  EXPECT_EQ(a.tasks, 3);
  EXPECT_FALSE(find_slurm_allocation(slurm_env({{"SLURM_JOB_ID", "9"}, {"SLURM_TASKS_PER_NODE", "two"}}), &a, &error));
  EXPECT_EQ(error, "inside Slurm job 9, SLURM_TASKS_PER_NODE='two' is not of Slurm's form (2(x3),1): cannot tell how "
                   "many ranks the allocation holds");
  error.clear();
  EXPECT_FALSE(find_slurm_allocation(slurm_env({{"SLURM_JOB_ID", "9"}}), &a, &error));
  EXPECT_EQ(error, "inside Slurm job 9, SLURM_TASKS_PER_NODE is not set: cannot tell how many ranks the allocation "
                   "holds");
}

TEST(KolorunSlurm, InsideAnAllocationNpDefaultsToItsTasksAndMpirunPlacesTheRanks) {
  SlurmAllocation a;
  std::string error;
  ASSERT_TRUE(find_slurm_allocation(slurm_env(kFourTasksOnTwoNodes), &a, &error));
  LaunchOptions o = parsed({"python3", "train.py"});
  ASSERT_TRUE(settle_rank_count(&a, &o, &error)) << error;
  EXPECT_EQ(o.num_proc, 4);
  Machine m = machine(true, {"PATH", "SLURM_JOB_ID", "SLURM_TASKS_PER_NODE"});
  m.placed_by_slurm = placed_by_slurm(&a, o);
  EXPECT_EQ(shell_join(build_mpirun_command(o, m).argv),
            "/usr/bin/mpirun --allow-run-as-root -np 4 --bind-to none --map-by slot -x PATH python3 train.py");
  // Fewer ranks than tasks.
  o = parsed({"-np", "2", "python3", "train.py"});
  ASSERT_TRUE(settle_rank_count(&a, &o, &error));
  EXPECT_EQ(o.num_proc, 2);
  // Hosts given: they are used, as outside an allocation (mpirun checks them against it).
  o = parsed({"-np", "2", "-H", "node-1:2", "python3", "train.py"});
  ASSERT_TRUE(settle_rank_count(&a, &o, &error));
  EXPECT_FALSE(placed_by_slurm(&a, o));
}

TEST(KolorunSlurm, MoreRanksThanTheAllocationHoldsAreRefused) {
  SlurmAllocation a;
  std::string error;
  ASSERT_TRUE(find_slurm_allocation(slurm_env(kFourTasksOnTwoNodes), &a, &error));
  LaunchOptions o = parsed({"-np", "5", "python3", "train.py"});
  EXPECT_FALSE(settle_rank_count(&a, &o, &error));
  EXPECT_EQ(error, "-np 5 is more than the 4 tasks of Slurm job 42 (SLURM_TASKS_PER_NODE=2(x2) on node-[1-2]); "
                   "nothing was started. Ask Slurm for more (sbatch -n), or give -np 4 or less");
}

TEST(KolorunSlurm, OutsideAnAllocationNpIsRequired) {
  std::string error;
  LaunchOptions o = parsed({"python3", "x.py"});
  EXPECT_FALSE(settle_rank_count(nullptr, &o, &error));
  EXPECT_EQ(error, "-np N is required (inside a Slurm allocation it defaults to the allocation's tasks)");
  o = parsed({"--min-np", "2", "python3", "x.py"});
  EXPECT_TRUE(settle_rank_count(nullptr, &o, &error));
  EXPECT_EQ(o.num_proc, 0);
}

TEST(KolorunSlurm, AnAllocationThatCannotBeReadMattersOnlyWhereItWouldPlaceTheRanks) {
  EXPECT_TRUE(wants_allocation(parsed({"-np", "2", "python3", "x.py"})));
  EXPECT_FALSE(wants_allocation(parsed({"-np", "2", "-H", "a:2", "python3", "x.py"})));
  EXPECT_FALSE(wants_allocation(parsed({"--min-np", "2", "python3", "x.py"})));
}

}  // namespace
}  // namespace launcher
}  // namespace kolo
