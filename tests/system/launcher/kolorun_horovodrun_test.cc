// A horovodrun command line (Horovod 0.28's options, every one) and its --config-file, as kolorun
// takes them: a Horovod job script ports by changing the launcher's name.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "config_file.h"
#include "elastic_hosts.h"
#include "host_discovery.h"
#include "kolorun_test_support.h"
#include "stop_signals.h"

namespace kolo {
namespace launcher {
namespace {

std::string temp_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

TEST(KolorunHorovodrun, TakesEveryOptionOfHorovodrun) {
  const std::string config = temp_file("kolorun_hvd_every.yaml", "params:\n  cycle_time_ms: 2\n");
  const std::string hostfile = temp_file("kolorun_hvd_hostfile", "localhost slots=2\n");
  const std::vector<std::vector<std::string>> options = {
      {"--num-proc", "2"}, {"--disable-cache"}, {"--start-timeout", "30"}, {"--network-interfaces", "eth0,eth1"},
      {"--network-interface", "eth0"}, {"--output-filename", "/tmp/out"}, {"--verbose"}, {"--config-file", config},
      {"-p", "22"}, {"--ssh-port", "22"}, {"-i", "/k/id"}, {"--ssh-identity-file", "/k/id"},
      {"--fusion-threshold-mb", "32"}, {"--cycle-time-ms", "5"}, {"--cache-capacity", "1024"},
      {"--hierarchical-allreduce"}, {"--no-hierarchical-allreduce"}, {"--hierarchical-allgather"},
      {"--no-hierarchical-allgather"}, {"--torus-allreduce"}, {"--no-torus-allreduce"}, {"--autotune"},
      {"--no-autotune"}, {"--autotune-log-file", "/tmp/a.csv"}, {"--autotune-warmup-samples", "3"},
      {"--autotune-steps-per-sample", "10"}, {"--autotune-bayes-opt-max-samples", "20"},
      {"--autotune-gaussian-process-noise", "0.8"}, {"--timeline-filename", "/tmp/t.json"},
      {"--timeline-mark-cycles"}, {"--no-timeline-mark-cycles"}, {"--no-stall-check"}, {"--stall-check"},
      {"--stall-check-warning-time-seconds", "60"}, {"--stall-check-shutdown-time-seconds", "0"},
      {"--mpi-threads-disable"}, {"--no-mpi-threads-disable"}, {"--mpi-args", "--tag-output"}, {"--tcp"},
      {"--binding-args", "--bind-to socket"}, {"--num-nccl-streams", "1"}, {"--thread-affinity", "0"},
      {"--gloo-timeout-seconds", "30"}, {"--log-level", "INFO"}, {"--log-with-timestamp"},
      {"--log-without-timestamp"}, {"-prefix-timestamp"}, {"--prefix-output-with-timestamp"},
      {"--log-hide-timestamp"}, {"--no-log-hide-timestamp"}, {"-H", "localhost:2"}, {"--hosts", "localhost:2"},
      {"-hostfile", hostfile}, {"--hostfile", hostfile}, {"--gloo"}, {"--mpi"},
      // Elastic mode's.
      {"--min-np", "1"}, {"--min-num-proc", "1"}, {"--max-np", "4"}, {"--max-num-proc", "4"},
      {"--slots-per-host", "2"}, {"--elastic-timeout", "600"}, {"--reset-limit", "3"},
      {"--blacklist-cooldown-range", "10", "100"}, {"--host-discovery-script", "./discover.sh"}};
  for (const std::vector<std::string>& option : options) {
    std::vector<std::string> args = {"-np", "2"};
    args.insert(args.end(), option.begin(), option.end());
    if (option[0] != "--min-np" && option[0] != "--min-num-proc") args.insert(args.end(), {"--min-np", "1"});
    args.push_back("./train.py");
    LaunchOptions o;
    std::string error;
    EXPECT_TRUE(parse_command_line(args, &o, &error)) << option[0] << ": " << error;
    EXPECT_EQ(o.command, std::vector<std::string>{"./train.py"}) << option[0];
  }
  for (const char* version : {"-v", "--version"}) EXPECT_TRUE(parsed({version}).version) << version;
  EXPECT_TRUE(parsed({"-cb"}).check_build);
  EXPECT_EQ(parse_error({"-np", "2", "--jsrun", "./t"}),
            "--jsrun: kolorun starts ranks with Open MPI's mpirun (or Slurm's, inside an allocation), not IBM's "
            "jsrun; drop the option");
}

TEST(KolorunHorovodrun, MpirunsShareOfTheOptions) {
  Translated t = translate({"-np", "2", "-H", "a:1,b:1", "--tcp", "--output-filename", "/tmp/out", "-prefix-timestamp",
                            "-p", "2222", "-i", "/k/id", "--network-interfaces", "eth0,eth1",
                            "--network-interface", "ib0", "--binding-args", "--bind-to socket --map-by socket", "./t"});
  EXPECT_EQ(t.argv,
            "/usr/bin/mpirun -np 2 -H a:1,b:1 --bind-to socket --map-by socket --mca plm_rsh_args "
            "'-p 2222 -i /k/id' --mca pml ob1 --mca btl '^openib' "
            "--output-filename /tmp/out --timestamp-output --mca btl_tcp_if_include eth0,eth1,ib0 "
            "--mca oob_tcp_if_include eth0,eth1,ib0 -x HOME -x NCCL_SOCKET_IFNAME -x PATH ./t");
  EXPECT_EQ(t.env, "NCCL_SOCKET_IFNAME=eth0,eth1,ib0");
  EXPECT_EQ(parsed({"-p", "22", "-i", "/k/id", "-np", "1", "./t"}).ssh_args(),
            (std::vector<std::string>{"-p", "22", "-i", "/k/id"}));
  EXPECT_EQ(parse_error({"-np", "2", "--ssh-port", "ssh", "./t"}), "--ssh-port expects a positive integer, got 'ssh'");
}

TEST(KolorunHorovodrun, WhatKoloDoesNotHaveReachesTheRanksAsHorovodsVariable) {
  // Rank 0 then says, once, that each means nothing in kolo (or nothing, where kolo does it anyway). --gloo,
  // --mpi and --gloo-timeout-seconds are kolo's own (KOLO_CONTROLLER, KOLO_GLOO_TIMEOUT_SECONDS).
  EXPECT_EQ(translate({"-np", "1", "--torus-allreduce", "--mpi-threads-disable", "--num-nccl-streams", "2",
                       "--thread-affinity", "0", "--gloo-timeout-seconds", "30", "--log-without-timestamp", "--gloo",
                       "--no-hierarchical-allgather", "--no-autotune", "--timeline-mark-cycles", "./t"})
                .env,
            "HOROVOD_TORUS_ALLREDUCE=1 HOROVOD_MPI_THREADS_DISABLE=1 HOROVOD_NUM_NCCL_STREAMS=2 "
            "HOROVOD_THREAD_AFFINITY=0 KOLO_GLOO_TIMEOUT_SECONDS=30 HOROVOD_LOG_HIDE_TIME=1 "
            "KOLO_CONTROLLER=gloo KOLO_HIERARCHICAL_ALLGATHER=0 KOLO_AUTOTUNE=0 KOLO_TIMELINE_MARK_CYCLES=1");
  EXPECT_EQ(translate({"-np", "1", "--disable-cache", "--stall-check", "--mpi", "./t"}).env, "KOLO_CONTROLLER=mpi");
}

TEST(KolorunHorovodrun, LogLevelsInHorovodrunsWords) {
  EXPECT_EQ(translate({"-np", "1", "--log-level", "FATAL", "./t"}).env, "KOLO_LOG_LEVEL=error");
  EXPECT_EQ(translate({"-np", "1", "--log-level", "Warning", "./t"}).env, "KOLO_LOG_LEVEL=warning");
  EXPECT_EQ(translate({"-np", "1", "--log-level", "trace", "./t"}).env, "KOLO_LOG_LEVEL=trace");
  EXPECT_EQ(parse_error({"-np", "1", "--log-level", "loud", "./t"}),
            "--log-level expects one of TRACE, DEBUG, INFO, WARNING, ERROR, FATAL, got 'loud'");
}

TEST(KolorunHorovodrun, AConfigFileSetsWhatTheCommandLineDoesNot) {
  const std::string path = temp_file("kolorun_hvd.yaml",
                                     "# horovodrun's config file\n"
                                     "controller: mpi\n"
                                     "params:\n"
                                     "  fusion_threshold_mb: 32\n"
                                     "  cycle_time_ms: 10   # a comment\n"
                                     "  cache_capacity: 2048\n"
                                     "  hierarchical_allreduce: false\n"
                                     "  hierarchical_allgather: True\n"
                                     "autotune:\n"
                                     "  enabled: true\n"
                                     "  log_file: '/tmp/tune #1.csv'\n"
                                     "  warmup_samples: ~\n"
                                     "timeline:\n"
                                     "  filename: \"/tmp/timeline.json\"\n"
                                     "  mark_cycles: yes\n"
                                     "stall_check:\n"
                                     "  enabled: false\n"
                                     "  warning_time_seconds: 60\n"
                                     "library_options:\n"
                                     "  num_nccl_streams: 2\n"
                                     "logging:\n"
                                     "  level: FATAL\n");
  // The command line's --cycle-time-ms wins over the file's; a disabled stall check over its time.
  EXPECT_EQ(translate({"-np", "1", "--config-file", path, "--cycle-time-ms", "3", "./t"}).env,
            "KOLO_CONTROLLER=mpi KOLO_FUSION_THRESHOLD_BYTES=33554432 KOLO_CACHE_CAPACITY=2048 "
            "KOLO_HIERARCHICAL_ALLREDUCE=0 KOLO_HIERARCHICAL_ALLGATHER=1 KOLO_AUTOTUNE=1 "
            "KOLO_AUTOTUNE_LOG=/tmp/tune #1.csv KOLO_TIMELINE=/tmp/timeline.json KOLO_TIMELINE_MARK_CYCLES=1 "
            "HOROVOD_NUM_NCCL_STREAMS=2 KOLO_LOG_LEVEL=error KOLO_STALL_CHECK_SECONDS=0 KOLO_CYCLE_TIME_MS=3");
}

TEST(KolorunHorovodrun, AConfigFileThatIsNotHorovodrunsSaysWhere) {
  auto error = [](const std::string& text) {
    std::vector<std::pair<std::string, std::string>> settings;
    std::string e;
    EXPECT_FALSE(read_config_file(text, &settings, &e)) << text;
    return e;
  };
  EXPECT_EQ(error("params:\n  fusion_threshold: 32\n"), "line 2: 'params.fusion_threshold' is not one of horovodrun's "
                                                          "config file keys");
  EXPECT_EQ(error("tuning:\n  x: 1\n"),
            "line 1: 'tuning' is not one of horovodrun's config file sections (params, autotune, timeline, "
            "stall_check, library_options, logging) or top-level keys (controller)");
  EXPECT_EQ(error("params:\n  cycle_time_ms: soon\n"),
            "line 2: params.cycle_time_ms: --cycle-time-ms expects a non-negative number, got 'soon'");
  EXPECT_EQ(error("autotune:\n  enabled: maybe\n"), "line 2: autotune.enabled is true or false, got 'maybe'");
  EXPECT_EQ(error("params:\n  cache_capacity: [1, 2]\n"),
            "line 2: cache_capacity: horovodrun's config file takes one value a key, got '[1, 2]'");
  EXPECT_EQ(error("controller: jsrun\n"), "line 1: controller is mpi or gloo, got 'jsrun'");
  EXPECT_EQ(error("params\n"), "line 1: expected 'key: value' or 'section:', got 'params'");
  EXPECT_EQ(parse_error({"-np", "1", "--config-file", "/nonexistent.yaml", "./t"}),
            "--config-file /nonexistent.yaml: cannot be read");
  const std::string bad = temp_file("kolorun_hvd_bad.yaml", "logging:\n  level: loud\n");
  EXPECT_EQ(parse_error({"-np", "1", "--config-file", bad, "./t"}),
            "--config-file " + bad +
                ": line 2: logging.level: --log-level expects one of TRACE, DEBUG, INFO, WARNING, ERROR, FATAL, got "
                "'loud'");
}

TEST(KolorunHorovodrun, SlotsPerHostForDiscoveredHostsWithoutACount) {
  std::vector<Host> hosts;
  std::string error;
  ASSERT_TRUE(parse_discovered_hosts("a:2\nb\n", &hosts, &error, 4)) << error;
  EXPECT_EQ(host_list_text(hosts), "a:2,b:4");
  EXPECT_EQ(parsed({"--min-np", "1", "--slots-per-host", "8", "./t"}).slots_per_host, 8);
  EXPECT_EQ(parse_error({"--slots-per-host", "2", "-np", "1", "./t"}),
            "--slots-per-host is for elastic mode: add --min-np, --max-np, --host-discovery-script or --in-place");
}

TEST(KolorunHorovodrun, ACooldownGrowsEachTimeWithinItsRange) {
  EXPECT_EQ(cooldown_seconds(10, 100, 1, 0.0), 20);
  EXPECT_EQ(cooldown_seconds(10, 100, 1, 0.5), 25);
  EXPECT_EQ(cooldown_seconds(10, 100, 2, 0.0), 40);
  EXPECT_EQ(cooldown_seconds(10, 100, 4, 0.0), 100);
  EXPECT_EQ(cooldown_seconds(10, 15, 1, 0.0), 15);
  EXPECT_EQ(cooldown_seconds(10, 10, 60, 0.9), 10);
  const LaunchOptions o = parsed({"--min-np", "1", "--blacklist-cooldown-range", "60", "300", "./t"});
  EXPECT_EQ(o.cooldown_low_seconds, 60);
  EXPECT_EQ(o.cooldown_high_seconds, 300);
  for (const std::vector<std::string>& range : {std::vector<std::string>{"0", "10"}, {"20", "10"}, {"1", "3601"},
                                                {"1", "x"}}) {
    EXPECT_EQ(parse_error({"--min-np", "1", "--blacklist-cooldown-range", range[0], range[1], "./t"}),
              "--blacklist-cooldown-range expects LOW HIGH seconds, 1 <= LOW <= HIGH <= 3600, got '" + range[0] + " " +
                  range[1] + "'");
  }
}

TEST(KolorunHorovodrun, AHostLeftOutForACooldownComesBack) {
  const LaunchOptions o =
      parsed({"--min-np", "1", "-H", "a:1,b:1", "--blacklist-after", "1", "--blacklist-cooldown-range", "60", "300", "./t"});
  HostState s;
  s.hosts = effective_hosts(o);
  count_failures(o, {"b"}, &s);
  EXPECT_EQ(host_list_text(s.hosts), "a:1");
  ASSERT_EQ(s.left_out.count("b"), 1u);
  EXPECT_GE(s.left_out["b"], now() + 119);  // the first time: 120-180 s
  EXPECT_LE(s.left_out["b"], now() + 181);
  rediscover(o, &s);
  EXPECT_EQ(host_list_text(s.hosts), "a:1");
  s.left_out["b"] = now() - 1;  // its cooldown over
  rediscover(o, &s);
  EXPECT_EQ(host_list_text(s.hosts), "a:1,b:1");
  EXPECT_EQ(s.failures.count("b"), 0u);
  // Without a range, for good.
  const LaunchOptions for_good = parsed({"--min-np", "1", "-H", "a:1,b:1", "--blacklist-after", "1", "./t"});
  HostState g;
  g.hosts = effective_hosts(for_good);
  count_failures(for_good, {"b"}, &g);
  EXPECT_TRUE(std::isinf(g.left_out["b"]));
  rediscover(for_good, &g);
  EXPECT_EQ(host_list_text(g.hosts), "a:1");
}

}  // namespace
}  // namespace launcher
}  // namespace kolo
