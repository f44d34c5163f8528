// Which world a process joins, from what started it (comm/launcher_env.h, api/world_choice.h): MPI's
// launchers give MPI, every other launcher Gloo, KOLO_CONTROLLER forces one; a launch whose variables do not
// fit, or a world this build lacks, is refused at once naming why. Never a silent world of one rank.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "api/world_choice.h"

namespace kolo {
namespace {

using Kind = LauncherEnv::Kind;

LauncherEnv env_of(const std::map<std::string, std::string>& vars, Status* s = nullptr) {
  LauncherEnv env;
  const Status read = read_launcher_env(
      [&vars](const char* name) -> const char* {
        auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
      },
      &env);
  if (s != nullptr) *s = read;
  return env;
}

TEST(LauncherEnv, TellsEachLauncherByItsVariables) {
  EXPECT_EQ(env_of({}).kind, Kind::kNone);
  LauncherEnv mpi = env_of({{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_RANK", "2"}, {"WORLD_SIZE", "9"}});
  EXPECT_EQ(mpi.kind, Kind::kMpi);
  EXPECT_EQ(mpi.name, "mpirun");
  EXPECT_EQ(mpi.size, 4);
  EXPECT_EQ(mpi.rank, 2);
  LauncherEnv torchrun = env_of({{"TORCHELASTIC_RUN_ID", "abc"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                                 {"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "2"},
                                 {"MASTER_ADDR", "localhost"}, {"MASTER_PORT", "29500"}});
  EXPECT_EQ(torchrun.kind, Kind::kTorchrun);
  EXPECT_FALSE(torchrun.serves_store);  // the agent's store: rank 0 never binds torchrun's port
  EXPECT_EQ(torchrun.store_port, 29500);
  EXPECT_EQ(torchrun.job_id, "torchrun-abc");
  LauncherEnv bare = env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h0"}, {"MASTER_PORT", "4000"}});
  EXPECT_EQ(bare.kind, Kind::kEnv);
  EXPECT_TRUE(bare.serves_store);
  LauncherEnv kolorun = env_of({{"KOLO_STORE_ADDR", "10.0.0.1"}, {"KOLO_STORE_PORT", "5555"}, {"KOLO_STORE_TOKEN", "t"},
                                {"RANK", "1"}, {"WORLD_SIZE", "2"}});
  EXPECT_EQ(kolorun.kind, Kind::kKolorun);
  EXPECT_EQ(kolorun.token, "t");
  EXPECT_FALSE(kolorun.serves_store);
  EXPECT_EQ(kolorun.name, "kolorun --gloo");
  // kolo.ray: kolorun's variables in a Ray worker, the driver (or Ray Train's controller) serving the store.
  LauncherEnv ray = env_of({{"KOLO_STORE_ADDR", "10.0.0.1"}, {"KOLO_STORE_PORT", "5555"}, {"RAY_RAYLET_PID", "7"},
                            {"RANK", "1"}, {"WORLD_SIZE", "2"}});
  EXPECT_EQ(ray.kind, Kind::kKolorun);
  EXPECT_EQ(ray.name, "kolo.ray");
  // A Kubernetes indexed Job numbers its pods.
  EXPECT_EQ(env_of({{"JOB_COMPLETION_INDEX", "3"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}}).rank,
            3);
  // kolorun --gloo under srun: Slurm numbers the ranks.
  EXPECT_EQ(env_of({{"KOLO_STORE_ADDR", "a"}, {"KOLO_STORE_PORT", "1"}, {"WORLD_SIZE", "4"}, {"SLURM_PROCID", "3"}}).rank,
            3);
}

TEST(LauncherEnv, RefusesVariablesThatDoNotFitNamingThem) {
  Status s;
  env_of({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}}, &s);
  EXPECT_EQ(s.message(), "RANK=2 is not a rank of WORLD_SIZE=2 (the job was started by MASTER_ADDR/MASTER_PORT/RANK/WORLD_SIZE)");
  // An indexed Job's pod index stands for RANK: the message names it as given.
  env_of({{"JOB_COMPLETION_INDEX", "4"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}}, &s);
  EXPECT_EQ(s.message(),
            "JOB_COMPLETION_INDEX=4 is not a rank of WORLD_SIZE=2 (the job was started by MASTER_ADDR/MASTER_PORT/RANK/WORLD_SIZE)");
  env_of({{"RANK", "0"}, {"WORLD_SIZE", "two"}}, &s);
  EXPECT_EQ(s.message(), "WORLD_SIZE='two' is not a rank count or index");
  env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}}, &s);
  EXPECT_EQ(s.message(), "MASTER_ADDR and MASTER_PORT must name the job's store (a host and a port from 1 to 65535) "
                         "(the job was started by MASTER_ADDR/MASTER_PORT/RANK/WORLD_SIZE)");
  env_of({{"RANK", "0"}, {"WORLD_SIZE", "1"}}, &s);
  EXPECT_TRUE(s.ok()) << "a job of one rank needs no store";
}

TEST(WorldChoice, MpisLaunchersGiveMpiEveryOtherGloo) {
  const LauncherEnv none, mpi = env_of({{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "0"}});
  const LauncherEnv torchrun = env_of({{"TORCHELASTIC_RUN_ID", "x"}, {"RANK", "0"}, {"WORLD_SIZE", "2"},
                                       {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}});
  using C = Config::Controller;
  EXPECT_FALSE(choose_world(C::kAuto, mpi, true).gloo);
  EXPECT_TRUE(choose_world(C::kAuto, torchrun, true).gloo);
  EXPECT_TRUE(choose_world(C::kAuto, none, true).gloo);
  EXPECT_FALSE(choose_world(C::kMpi, torchrun, true).gloo);  // forced: then its size is checked against MPI's
  EXPECT_FALSE(choose_world(C::kAuto, none, false).gloo);   // no Gloo, no launcher: one rank over MPI
  EXPECT_TRUE(choose_world(C::kAuto, none, false).refusal.ok());
}

TEST(WorldChoice, RefusesWhatCannotStartSayingWhy) {
  using C = Config::Controller;
  const LauncherEnv torchrun = env_of({{"TORCHELASTIC_RUN_ID", "x"}, {"RANK", "0"}, {"WORLD_SIZE", "2"},
                                       {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}});
  EXPECT_EQ(choose_world(C::kAuto, torchrun, false).refusal.message(),
            "init(): this process was started by torchrun (WORLD_SIZE=2), which only the Gloo world can join, and this "
            "kolo was built without Gloo (KOLO_WITH_GLOO): start the job with kolorun or mpirun");
  EXPECT_EQ(choose_world(C::kGloo, LauncherEnv(), false).refusal.message(),
            "init(): KOLO_CONTROLLER=gloo, but this kolo was built without Gloo (KOLO_WITH_GLOO; kolorun --check-build "
            "says what it was built with)");
  const LauncherEnv mpi = env_of({{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "0"}});
  EXPECT_EQ(choose_world(C::kGloo, mpi, true).refusal.code(), StatusCode::kUnsupported);
  const LauncherEnv mpi_with_store = env_of({{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "0"},
                                             {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "4000"}});
  EXPECT_TRUE(choose_world(C::kGloo, mpi_with_store, true).gloo);
  EXPECT_TRUE(choose_world(C::kGloo, mpi_with_store, true).refusal.ok());
}

}  // namespace
}  // namespace kolo
