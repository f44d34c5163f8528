// kolorun in a Kubeflow MPI Operator's launcher pod: the hosts and slots of the hostfile the operator names.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "default_hostfile.h"
#include "kolorun_test_support.h"
#include "launch_options.h"
#include "mpirun_command.h"

namespace kolo {
namespace launcher {
namespace {

std::function<const char*(const char*)> env_of(std::map<std::string, std::string> vars) {
  auto env = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [env](const char* name) -> const char* {
    auto it = env->find(name);
    return it == env->end() ? nullptr : it->second.c_str();
  };
}

// The operator's hostfile for 2 workers of 2 slots each (its form: "<pod>.<service> slots=N").
std::string operator_hostfile() {
  const std::string path = ::testing::TempDir() + "kolorun_mpi_operator_hostfile";
  std::ofstream(path) << "job-worker-0.job.default.svc slots=2\njob-worker-1.job.default.svc slots=2\n";
  return path;
}

TEST(KolorunDefaultHostfile, TakesTheOperatorsHostsAndCountsTheirSlots) {
  const std::string path = operator_hostfile();
  LaunchOptions o = parsed({"python3", "train.py"});
  std::string error;
  ASSERT_TRUE(take_default_hostfile(env_of({{"OMPI_MCA_orte_default_hostfile", path}}), &o, &error)) << error;
  EXPECT_EQ(o.num_proc, 4);
  EXPECT_EQ(o.hostfile, path + " (OMPI_MCA_orte_default_hostfile)");
  EXPECT_EQ(shell_join(build_mpirun_command(o, machine(true, {"PATH"})).argv),
            "/usr/bin/mpirun --allow-run-as-root -np 4 -H job-worker-0.job.default.svc:2,job-worker-1.job.default.svc:2 "
            "--bind-to none --map-by slot -x PATH python3 train.py");
  // Open MPI 5's name; and -np given stays.
  o = parsed({"-np", "2", "python3", "train.py"});
  ASSERT_TRUE(take_default_hostfile(env_of({{"PRTE_MCA_prte_default_hostfile", path}}), &o, &error)) << error;
  EXPECT_EQ(o.num_proc, 2);
  EXPECT_EQ(o.hosts.size(), 2u);
}

TEST(KolorunDefaultHostfile, HostsGivenOrNoneNamedLeaveTheOptionsAlone) {
  const std::string path = operator_hostfile();
  std::string error;
  LaunchOptions o = parsed({"-np", "2", "-H", "a:2", "python3", "train.py"});
  EXPECT_FALSE(take_default_hostfile(env_of({{"OMPI_MCA_orte_default_hostfile", path}}), &o, &error));
  EXPECT_EQ(error, "");
  EXPECT_EQ(o.hosts.size(), 1u);
  o = parsed({"python3", "train.py"});
  EXPECT_FALSE(take_default_hostfile(env_of({}), &o, &error));
  EXPECT_EQ(error, "");
  EXPECT_EQ(o.num_proc, 0);
}

TEST(KolorunDefaultHostfile, AFileThatCannotBeReadIsNamed) {
  LaunchOptions o = parsed({"python3", "train.py"});
  std::string error;
  EXPECT_FALSE(take_default_hostfile(env_of({{"OMPI_MCA_orte_default_hostfile", "/nonexistent/hostfile"}}), &o,
                                     &error));
  EXPECT_EQ(error, "cannot read the hostfile OMPI_MCA_orte_default_hostfile names ('/nonexistent/hostfile')");
  const std::string bad = ::testing::TempDir() + "kolorun_bad_hostfile";
  std::ofstream(bad) << "worker-0 cores=2\n";
  EXPECT_FALSE(take_default_hostfile(env_of({{"OMPI_MCA_orte_default_hostfile", bad}}), &o, &error));
  EXPECT_EQ(error, "the hostfile OMPI_MCA_orte_default_hostfile names ('" + bad +
                       "'): line 1: expected 'host slots=N', got 'worker-0 cores=2'");
  EXPECT_TRUE(o.hosts.empty());
}

}  // namespace
}  // namespace launcher
}  // namespace kolo
