// kolorun's translation of command lines into mpirun commands, as a table.
#include <gtest/gtest.h>

#include <fstream>

#include "launch_options.h"
#include "mpirun_command.h"

namespace kolo {
namespace launcher {
namespace {

struct Translated {
  std::string argv;  // shell_join of the mpirun command
  std::string env;   // NAME=VALUE set for mpirun, space separated
};

Machine machine(bool root = false, std::vector<std::string> env = {"PATH", "HOME"}) {
  Machine m;
  m.mpirun = "/usr/bin/mpirun";
  m.is_root = root;
  m.hostname = "node1.example.com";
  m.env_names = std::move(env);
  return m;
}

Translated translate(const std::vector<std::string>& args, const Machine& m = machine()) {
  LaunchOptions o;
  std::string error;
  EXPECT_TRUE(parse_command_line(args, &o, &error)) << error;
  MpirunCommand c = build_mpirun_command(o, m);
  Translated t;
  t.argv = shell_join(c.argv);
  for (const auto& kv : c.set_env) t.env += (t.env.empty() ? "" : " ") + kv.first + "=" + kv.second;
  return t;
}

std::string parse_error(const std::vector<std::string>& args) {
  LaunchOptions o;
  std::string error;
  EXPECT_FALSE(parse_command_line(args, &o, &error));
  return error;
}

TEST(KolorunCommand, LocalJob) {
  Translated t = translate({"-np", "4", "python3", "train.py", "--epochs", "3"});
  EXPECT_EQ(t.argv,
            "/usr/bin/mpirun -np 4 -H localhost:4 --bind-to none --map-by slot -x PATH python3 train.py --epochs 3");
  EXPECT_EQ(t.env, "");
}

TEST(KolorunCommand, RootGetsOpenMpisConsentFlag) {
  EXPECT_EQ(translate({"-np", "1", "./a"}, machine(true)).argv,
            "/usr/bin/mpirun --allow-run-as-root -np 1 -H localhost:1 --bind-to none --map-by slot -x PATH ./a");
}

TEST(KolorunCommand, TwoHosts) {
  EXPECT_EQ(translate({"-np", "4", "-H", "a:2,b:2", "./train"}).argv,
            "/usr/bin/mpirun -np 4 -H a:2,b:2 --bind-to none --map-by slot -x PATH ./train");
  EXPECT_EQ(translate({"-np", "3", "--hosts", "a,b,c", "./train"}).argv,
            "/usr/bin/mpirun -np 3 -H a:1,b:1,c:1 --bind-to none --map-by slot -x PATH ./train");
}

TEST(KolorunCommand, Hostfile) {
  const std::string path = ::testing::TempDir() + "kolorun_hostfile";
  std::ofstream(path) << "# two hosts\nh1 slots=2\nh2:3  # trailing comment\n\nh3\n";
  EXPECT_EQ(translate({"-np", "6", "--hostfile", path, "./t"}).argv,
            "/usr/bin/mpirun -np 6 -H h1:2,h2:3,h3:1 --bind-to none --map-by slot -x PATH ./t");
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
            "--mca btl_tcp_if_include eth1 --mca oob_tcp_if_include eth1 -x PATH -x KOLO_CACHE_CAPACITY "
            "-x KOLO_CYCLE_TIME_MS -x KOLO_FUSION_THRESHOLD_BYTES -x KOLO_HIERARCHICAL_ALLGATHER "
            "-x KOLO_HIERARCHICAL_ALLREDUCE -x KOLO_LOG_LEVEL -x KOLO_STALL_CHECK_SECONDS "
            "-x KOLO_STALL_SHUTDOWN_SECONDS -x KOLO_TIMELINE -x NCCL_SOCKET_IFNAME -x SECRET_TOKEN -x HOME "
            "--mca btl '^openib' --tag-output ./t -v");
  // Values travel in mpirun's environment, never on its command line.
  EXPECT_EQ(t.env,
            "KOLO_TIMELINE=/tmp/t.json KOLO_FUSION_THRESHOLD_BYTES=33554432 KOLO_CYCLE_TIME_MS=2.5 "
            "KOLO_CACHE_CAPACITY=0 KOLO_HIERARCHICAL_ALLREDUCE=1 KOLO_HIERARCHICAL_ALLGATHER=1 "
            "KOLO_STALL_CHECK_SECONDS=30 KOLO_STALL_SHUTDOWN_SECONDS=120 KOLO_LOG_LEVEL=debug "
            "NCCL_SOCKET_IFNAME=eth1 SECRET_TOKEN=abc");
}

TEST(KolorunCommand, ForwardsKoloNcclAndPathsFromTheEnvironment) {
  Translated t = translate({"-np", "1", "./t"},
                           machine(false, {"NCCL_DEBUG", "HOME", "KOLO_LOG_LEVEL", "PYTHONPATH", "LD_LIBRARY_PATH", "PATH"}));
  EXPECT_EQ(t.argv,
            "/usr/bin/mpirun -np 1 -H localhost:1 --bind-to none --map-by slot -x PATH -x LD_LIBRARY_PATH "
            "-x PYTHONPATH -x KOLO_LOG_LEVEL -x NCCL_DEBUG ./t");
}

TEST(KolorunCommand, LongOptionsTakeValuesAfterAnEqualsSign) {
  Translated t = translate({"-np", "2", "--fusion-threshold-mb=16", "--mpi-args=--mca btl self,tcp", "./t",
                            "--lr=0.1"});
  EXPECT_EQ(t.argv,
            "/usr/bin/mpirun -np 2 -H localhost:2 --bind-to none --map-by slot -x PATH -x KOLO_FUSION_THRESHOLD_BYTES "
            "--mca btl self,tcp ./t --lr=0.1");
  EXPECT_EQ(t.env, "KOLO_FUSION_THRESHOLD_BYTES=16777216");
}

TEST(KolorunCommand, ASubnetIsForMpiOnly) {
  Translated t = translate({"-np", "2", "--network-interface", "10.1.2.0/24", "./t"});
  EXPECT_EQ(t.argv,
            "/usr/bin/mpirun -np 2 -H localhost:2 --bind-to none --map-by slot --mca btl_tcp_if_include 10.1.2.0/24 "
            "--mca oob_tcp_if_include 10.1.2.0/24 -x PATH ./t");
  EXPECT_EQ(t.env, "");
}

TEST(KolorunCommand, NoStallCheckAndDoubleDash) {
  Translated t = translate({"-np", "1", "--no-stall-check", "--", "-weird-program"});
  EXPECT_EQ(t.argv,
            "/usr/bin/mpirun -np 1 -H localhost:1 --bind-to none --map-by slot -x PATH -x KOLO_STALL_CHECK_SECONDS "
            "-weird-program");
  EXPECT_EQ(t.env, "KOLO_STALL_CHECK_SECONDS=0");
}

TEST(KolorunCommand, BadCommandLines) {
  EXPECT_EQ(parse_error({"python3", "x.py"}), "-np N is required");
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
