// kolorun's translation of command lines into mpirun commands, as a table. Elastic mode's and Slurm's
// share the executable: kolorun_elastic_test.cc, kolorun_slurm_test.cc.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "forwarded_environment.h"
#include "kolorun_test_support.h"
#include "launch_options.h"
#include "mpirun_command.h"

namespace kolo {
namespace launcher {
namespace {

TEST(KolorunCommand, LocalJob) {
  Translated t = translate({"-np", "4", "python3", "train.py", "--epochs", "3"});
  EXPECT_EQ(t.argv,
            "/usr/bin/mpirun -np 4 -H localhost:4 --bind-to none --map-by slot -x HOME -x PATH python3 train.py --epochs 3");
  EXPECT_EQ(t.env, "");
}

TEST(KolorunCommand, RootGetsOpenMpisConsentFlag) {
  EXPECT_EQ(translate({"-np", "1", "./a"}, machine(true)).argv,
            "/usr/bin/mpirun --allow-run-as-root -np 1 -H localhost:1 --bind-to none --map-by slot -x HOME -x PATH ./a");
}

TEST(KolorunCommand, TwoHosts) {
  EXPECT_EQ(translate({"-np", "4", "-H", "a:2,b:2", "./train"}).argv,
            "/usr/bin/mpirun -np 4 -H a:2,b:2 --bind-to none --map-by slot -x HOME -x PATH ./train");
  EXPECT_EQ(translate({"-np", "3", "--hosts", "a,b,c", "./train"}).argv,
            "/usr/bin/mpirun -np 3 -H a:1,b:1,c:1 --bind-to none --map-by slot -x HOME -x PATH ./train");
}

TEST(KolorunCommand, Hostfile) {
  const std::string path = ::testing::TempDir() + "kolorun_hostfile";
  std::ofstream(path) << "# two hosts\nh1 slots=2\nh2:3  # trailing comment\n\nh3\n";
  EXPECT_EQ(translate({"-np", "6", "--hostfile", path, "./t"}).argv,
            "/usr/bin/mpirun -np 6 -H h1:2,h2:3,h3:1 --bind-to none --map-by slot -x HOME -x PATH ./t");
}

TEST(KolorunCommand, EveryOptionBecomesAKoloVariableOrAnMpirunFlag) {
  Translated t = translate({"-np", "2", "--timeline-filename", "/tmp/t.json", "--fusion-threshold-mb", "32",
                            "--cycle-time-ms", "2.5", "--cache-capacity", "0", "--hierarchical-allreduce",
                            "--hierarchical-allgather", "--stall-check-warning-time-seconds", "30",
                            "--stall-check-shutdown-time-seconds", "120", "--log-level", "debug",
                            "--network-interface", "eth1", "--rsh-agent", "/opt/agent.sh", "-x", "SECRET_TOKEN=abc",
                            "-x", "HOME", "--mpi-args", "--mca btl ^openib --tag-output", "--verbose", "./t", "-v"});
  EXPECT_EQ(t.argv,
            "/usr/bin/mpirun -np 2 -H localhost:2 --bind-to none --map-by slot --mca plm_rsh_agent /opt/agent.sh "
            "--mca btl_tcp_if_include eth1 --mca oob_tcp_if_include eth1 -x HOME -x KOLO_CACHE_CAPACITY "
            "-x KOLO_CYCLE_TIME_MS -x KOLO_FUSION_THRESHOLD_BYTES -x KOLO_HIERARCHICAL_ALLGATHER "
            "-x KOLO_HIERARCHICAL_ALLREDUCE -x KOLO_LOG_LEVEL -x KOLO_STALL_CHECK_SECONDS "
            "-x KOLO_STALL_SHUTDOWN_SECONDS -x KOLO_TIMELINE -x NCCL_SOCKET_IFNAME -x PATH -x SECRET_TOKEN "
            "--mca btl '^openib' --tag-output ./t -v");
  // Values travel in mpirun's environment, never on its command line.
  EXPECT_EQ(t.env,
            "KOLO_TIMELINE=/tmp/t.json KOLO_FUSION_THRESHOLD_BYTES=33554432 KOLO_CYCLE_TIME_MS=2.5 "
            "KOLO_CACHE_CAPACITY=0 KOLO_HIERARCHICAL_ALLREDUCE=1 KOLO_HIERARCHICAL_ALLGATHER=1 "
            "KOLO_STALL_CHECK_SECONDS=30 KOLO_STALL_SHUTDOWN_SECONDS=120 KOLO_LOG_LEVEL=debug "
            "NCCL_SOCKET_IFNAME=eth1 SECRET_TOKEN=abc");
}

TEST(KolorunCommand, HorovodrunsAutotuneOptionsBecomeKoloVariables) {
  Translated t = translate({"-np", "2", "--autotune", "--autotune-log-file", "/tmp/tune.csv",
                            "--autotune-warmup-samples", "1", "--autotune-steps-per-sample", "5",
                            "--autotune-bayes-opt-max-samples", "12", "--autotune-gaussian-process-noise", "0.5", "./t"});
  EXPECT_EQ(t.env,
            "KOLO_AUTOTUNE=1 KOLO_AUTOTUNE_LOG=/tmp/tune.csv KOLO_AUTOTUNE_WARMUP_SAMPLES=1 "
            "KOLO_AUTOTUNE_STEPS_PER_SAMPLE=5 KOLO_AUTOTUNE_BAYES_OPT_MAX_SAMPLES=12 "
            "KOLO_AUTOTUNE_GAUSSIAN_PROCESS_NOISE=0.5");
}

TEST(KolorunCommand, NoHierarchicalAllreduceAsksForFlat) {
  EXPECT_EQ(translate({"-np", "4", "--no-hierarchical-allreduce", "./t"}).env, "KOLO_HIERARCHICAL_ALLREDUCE=0");
}

TEST(KolorunCommand, ForwardsTheEnvironmentButWhatIsHostSpecific) {
  Translated t = translate(
      {"-np", "1", "./t"},
      machine(false, {"NCCL_DEBUG", "HOME", "KOLO_LOG_LEVEL", "PYTHONPATH", "LD_LIBRARY_PATH", "PATH", "WANDB_API_KEY",
                      "HF_HOME", "HOSTNAME", "PWD", "OLDPWD", "SHLVL", "_", "SSH_CONNECTION", "SSH_AUTH_SOCK", "DISPLAY",
                      "XDG_RUNTIME_DIR", "XDG_SESSION_ID", "TMUX", "CUDA_VISIBLE_DEVICES", "SLURM_JOB_ID",
                      "SLURMD_NODENAME", "OMPI_COMM_WORLD_RANK", "OMPI_MCA_btl", "PMIX_RANK", "HOROVOD_SECRET_KEY",
                      "HOROVOD_FUSION_THRESHOLD", "BASH_FUNC_module%%"}));
  EXPECT_EQ(t.argv,
            "/usr/bin/mpirun -np 1 -H localhost:1 --bind-to none --map-by slot -x HF_HOME -x HOME "
            "-x HOROVOD_FUSION_THRESHOLD -x KOLO_LOG_LEVEL -x LD_LIBRARY_PATH -x NCCL_DEBUG -x PATH -x PYTHONPATH "
            "-x WANDB_API_KEY ./t");
}

TEST(KolorunCommand, DashXForwardsEvenAHostSpecificVariable) {
  Translated t = translate({"-np", "1", "-x", "CUDA_VISIBLE_DEVICES", "-x", "TOKEN=1", "./t"},
                           machine(false, {"PATH", "CUDA_VISIBLE_DEVICES"}));
  EXPECT_EQ(t.argv,
            "/usr/bin/mpirun -np 1 -H localhost:1 --bind-to none --map-by slot -x PATH -x TOKEN "
            "-x CUDA_VISIBLE_DEVICES ./t");
  EXPECT_EQ(t.env, "TOKEN=1");
}

TEST(KolorunCommand, WhichVariablesAreHostSpecific) {
  for (const char* name : {"HOSTNAME", "HOST", "PWD", "OLDPWD", "SHLVL", "_", "SSH_CLIENT", "DISPLAY", "XAUTHORITY",
                           "XDG_SESSION_TYPE", "TMUX_PANE", "CUDA_VISIBLE_DEVICES", "SLURM_PROCID", "SLURMD_NODENAME",
                           "OMPI_MCA_btl", "OMPI_COMM_WORLD_SIZE", "PMIX_NAMESPACE", "PMI_RANK", "HOROVOD_SECRET_KEY",
                           "BASH_FUNC_ml%%", "1X", ""}) {
    EXPECT_FALSE(forwarded_to_ranks(name)) << name;
  }
  for (const char* name : {"PATH", "HOME", "USER", "LANG", "TERM", "TMPDIR", "LD_PRELOAD", "WANDB_API_KEY", "HF_HOME",
                           "HOROVOD_TIMELINE", "KOLO_MPIRUN", "NCCL_DEBUG", "MY_CUDA_VISIBLE_DEVICES_NOTE",
                           "SLURMX", "XDG_CONFIG_HOME", "SSH", "HOSTNAME_ALIAS"}) {
    EXPECT_TRUE(forwarded_to_ranks(name)) << name;
  }
}

// docs/running-jobs.md lists every variable kolorun keeps from the ranks.
TEST(KolorunCommand, DocsListTheHostSpecificVariables) {
  std::ifstream page(KOLO_SOURCE_DIR "/docs/running-jobs.md");
  ASSERT_TRUE(page.good());
  std::stringstream text;
  text << page.rdbuf();
  for (const HostSpecificVariables& g : host_specific_variables()) {
    for (const std::string& p : g.patterns) {
      EXPECT_NE(text.str().find("`" + p + "`"), std::string::npos) << "docs/running-jobs.md lacks `" << p << "`";
    }
  }
}

TEST(KolorunCommand, LongOptionsTakeValuesAfterAnEqualsSign) {
  Translated t = translate({"-np", "2", "--fusion-threshold-mb=16", "--mpi-args=--mca btl self,tcp", "./t",
                            "--lr=0.1"});
  EXPECT_EQ(t.argv,
            "/usr/bin/mpirun -np 2 -H localhost:2 --bind-to none --map-by slot -x HOME -x KOLO_FUSION_THRESHOLD_BYTES "
            "-x PATH --mca btl self,tcp ./t --lr=0.1");
  EXPECT_EQ(t.env, "KOLO_FUSION_THRESHOLD_BYTES=16777216");
}

TEST(KolorunCommand, ASubnetIsForMpiOnly) {
  Translated t = translate({"-np", "2", "--network-interface", "10.1.2.0/24", "./t"});
  EXPECT_EQ(t.argv,
            "/usr/bin/mpirun -np 2 -H localhost:2 --bind-to none --map-by slot --mca btl_tcp_if_include 10.1.2.0/24 "
            "--mca oob_tcp_if_include 10.1.2.0/24 -x HOME -x PATH ./t");
  EXPECT_EQ(t.env, "");
}

TEST(KolorunCommand, NoStallCheckAndDoubleDash) {
  Translated t = translate({"-np", "1", "--no-stall-check", "--", "-weird-program"});
  EXPECT_EQ(t.argv,
            "/usr/bin/mpirun -np 1 -H localhost:1 --bind-to none --map-by slot -x HOME -x KOLO_STALL_CHECK_SECONDS "
            "-x PATH -weird-program");
  EXPECT_EQ(t.env, "KOLO_STALL_CHECK_SECONDS=0");
}

TEST(KolorunCommand, BadCommandLines) {
  EXPECT_EQ(parse_error({"-np", "2"}), "no command to run: kolorun -np N [options] command [args...]");
  EXPECT_EQ(parse_error({"-np", "0", "x"}), "-np expects a positive integer, got '0'");
  EXPECT_EQ(parse_error({"-np", "two", "x"}), "-np expects a positive integer, got 'two'");
  EXPECT_EQ(parse_error({"-np", "2", "--bogus", "x"}),
            "unknown option '--bogus' (kolorun --help lists them; pass mpirun's own with --mpi-args)");
  EXPECT_EQ(parse_error({"-np", "2", "-H", "a:0", "x"}), "bad slot count in 'a:0': expected host:N with N >= 1");
  EXPECT_EQ(parse_error({"-np", "2", "-H", "a,,b", "x"}), "empty host name in -H 'a,,b'");
  EXPECT_EQ(parse_error({"-np", "2", "--fusion-threshold-mb", "-1", "x"}),
            "--fusion-threshold-mb expects a non-negative integer, got '-1'");
  EXPECT_EQ(parse_error({"-np", "2", "--cache-capacity", "1.5", "x"}),
            "--cache-capacity expects a non-negative integer, got '1.5'");
  EXPECT_EQ(parse_error({"-np", "2", "-x", "1BAD", "x"}), "-x expects VAR or VAR=VALUE, got '1BAD'");
  EXPECT_EQ(parse_error({"-np", "2", "--mpi-args", "'open", "x"}), "unterminated ' quote in --mpi-args");
  EXPECT_EQ(parse_error({"-np", "2", "--hostfile", "/nonexistent/hosts", "x"}), "cannot read hostfile '/nonexistent/hosts'");
  EXPECT_EQ(parse_error({"-np", "2", "-H", "a:1", "--hostfile", "/x", "x"}), "give hosts once, with -H or --hostfile");
  EXPECT_EQ(parse_error({"-np"}), "-np needs a value");
  EXPECT_EQ(parse_error({"-np", "1", "--verbose=yes", "x"}), "--verbose takes no value");
  EXPECT_EQ(parse_error({"-np", "1", "--start-timeout", "0", "x"}),
            "--start-timeout expects a positive number of seconds, got '0'");
}

TEST(KolorunCommand, VersionCheckBuildAndHelpNeedNoRanksOrCommand) {
  for (const char* option : {"--version", "--check-build", "-cb", "--help", "-h"}) {
    LaunchOptions o = parsed({option});
    EXPECT_EQ(o.version, std::string(option) == "--version") << option;
    EXPECT_EQ(o.check_build, std::string(option) == "--check-build" || std::string(option) == "-cb") << option;
    EXPECT_EQ(o.help, std::string(option) == "--help" || std::string(option) == "-h") << option;
  }
  EXPECT_EQ(parse_error({"--version=1"}), "--version takes no value");
}

TEST(KolorunCommand, LocalHostsNeedNoSsh) {
  EXPECT_TRUE(is_local_host("localhost", "node1.example.com"));
  EXPECT_TRUE(is_local_host("node1", "node1.example.com"));
  EXPECT_TRUE(is_local_host("node1.example.com", "node1.example.com"));
  EXPECT_FALSE(is_local_host("node2", "node1.example.com"));
}

TEST(KolorunCommand, ShellWords) {
  std::vector<std::string> w;
  std::string error;
  ASSERT_TRUE(split_shell_words(R"(a 'b c' "d \"e\"" f\ g)", &w, &error));
  EXPECT_EQ(w, (std::vector<std::string>{"a", "b c", "d \"e\"", "f g"}));
  EXPECT_EQ(shell_join({"a b", "it's", "plain-1"}), R"('a b' 'it'\''s' plain-1)");
}

}  // namespace
}  // namespace launcher
}  // namespace kolo
