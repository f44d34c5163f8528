#include "attempt_watch.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>
#include <vector>

#include "attempt_start.h"
#include "elastic_launch.h"
#include "failure_blame.h"
#include "launcher_messages.h"
#include "mpirun_command.h"
#include "stale_session_dir.h"
#include "stop_signals.h"

namespace kolo {
namespace launcher {
namespace {

// How long mpirun may outlive a peer watch's report of a lost rank before kolorun ends it.
constexpr double kLostPeerGraceSeconds = 10;
// How long mpirun may outlive the last survivor's exit, in place, before kolorun ends it (it is
// waiting for a lost process that will not end: frozen, or on a host cut off).
constexpr double kSurvivorsGoneGraceSeconds = 3;

}  // namespace

bool OutputWatch::pump() {
  pump(&out);
  pump(&err);
  return out.open || err.open;
}

void OutputWatch::pump(PassedStream* stream) {
  char buffer[4096];
  while (stream->open) {
    const ssize_t n = read(stream->from, buffer, sizeof buffer);
    if (n > 0) {
      if (write(stream->to, buffer, static_cast<size_t>(n)) < 0) {
        // kolorun's own stream is gone: keep reading, so that mpirun never blocks on a full pipe
      }
      for (ssize_t i = 0; i < n; ++i) {
        if (buffer[i] != '\n') {
          stream->line += buffer[i];
          continue;
        }
        take(stream->line);
        stream->line.clear();
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    stream->open = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    return;
  }
}

void OutputWatch::take(const std::string& line) {
  std::string host;
  const Blame blame = blamed_host(line, &host);
  if (blame != Blame::kNone) blamed.insert(host);
  if (blame == Blame::kLostPeer && peer_lost_at == 0) peer_lost_at = now();
  survivors.read(line);
  if (const int n = in_place_job_size(line)) in_place_size = n;
  if (recovery_given_up_at == 0 && recovery_given_up(line)) recovery_given_up_at = now();
  if (started_ranks(line) > 0) started = true;
}

void OutputWatch::wait_for_output(int ms) const {
  pollfd p[2];
  nfds_t n = 0;
  for (const PassedStream* stream : {&out, &err}) {
    if (stream->open) p[n++] = pollfd{stream->from, POLLIN, 0};
  }
  if (n == 0 || poll(p, n, ms) < 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

void OutputWatch::close_streams() {
  for (PassedStream* stream : {&out, &err}) {
    if (stream->from >= 0) close(stream->from);
    stream->from = -1;
  }
}

int watch(pid_t pid, const LaunchOptions& o, HostState* s, int num_proc, int attempt, OutputWatch* output) {
  const std::vector<Host> started_on = s->hosts;
  bool asked = false;
  double ending_since = 0;  // when kolorun began ending an attempt that outlived a lost peer
  double survivors_gone_at = 0;  // in place: when the last survivor said it exits
  bool ending_for_recovery = false;
  const double started_at = now();
  double next = now() + o.discovery_interval_seconds;
  // What runs the attempt's ranks, in messages: mpirun, or kolorun --gloo's child (launcher/gloo_launch.h).
  const std::string runner = o.gloo ? "the attempt's kolorun --gloo" : "mpirun";
  int status = 0;
  for (;;) {
    output->pump();
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      output->pump();  // what mpirun wrote last
      // Killed, mpirun could not remove its session directory: the next process with its pid would trip on it.
      if (WIFSIGNALED(status) && !o.gloo) remove_session_dir(pid);
      // Ended after the survivors (by kolorun, or as the lost rank gave up too): theirs is the job's status, not
      // the runner's, which may be a lost rank's failure.
      if (o.in_place && output->survivors.all_exited()) return W_EXITCODE(output->survivors.status(), 0);
      // A recovery given up is a failed attempt, whatever mpirun made of SIGTERM.
      return ending_for_recovery && status == 0 ? W_EXITCODE(1, 0) : status;
    }
    if (r < 0 && errno != EINTR) return W_EXITCODE(1, 0);  // not ours to wait for: cannot happen
    // Two reasons to end mpirun, SIGTERM then SIGKILL. Without --in-place the survivors of a lost peer
    // end at once, but mpirun may still wait for its daemon on a host that cannot be reached (a cut
    // link), forever. In place, once every survivor has exited, what mpirun still waits for is a lost
    // process that will not end (frozen, or on a host cut off): the job is over, with their status.
    const bool outlived_peer =
        !o.in_place && output->peer_lost_at > 0 && now() - output->peer_lost_at > kLostPeerGraceSeconds;
    if (o.in_place && survivors_gone_at == 0 && output->survivors.all_exited()) survivors_gone_at = now();
    const bool survivors_gone = survivors_gone_at > 0 && now() - survivors_gone_at > kSurvivorsGoneGraceSeconds;
    // A rank frozen (or its host cut off) in MPI's start-up holds every rank there, out of reach of
    // kolo's peer watch and of ULFM's detector: the attempt ends and the next starts from the last commit.
    const bool not_started = !output->started && now() - started_at > o.ranks_start_timeout_seconds;
    // In place, a rank gave up a recovery that could not finish (a lost peer MPI never declared failed); the
    // others give up within moments: the attempt is over, and the next starts from the last commit.
    const bool recovery_stuck = o.in_place && output->recovery_given_up_at > 0 &&
                                now() - output->recovery_given_up_at > kLostPeerGraceSeconds;
    if (outlived_peer || survivors_gone || not_started || recovery_stuck) {
      if (ending_since == 0) {
        if (recovery_stuck && !survivors_gone) {
          say() << "a rank gave up its recovery in place (a lost peer that MPI never declared failed) "
                << kLostPeerGraceSeconds << " s ago: ending " << runner << "\n";
          ending_for_recovery = true;
        } else if (not_started && !survivors_gone && !outlived_peer) {
          say() << "the ranks of attempt " << attempt << " have not all started within --start-timeout "
                << o.ranks_start_timeout_seconds << " s (one frozen, or its host unreachable, in MPI's start-up?): "
                << "ending " << runner << "\n";
        } else if (survivors_gone) {
          say() << "every rank left in place has exited (status " << output->survivors.status()
                << "); " << runner << " still waits for a lost one (frozen, or its host cut off): ending it\n";
        } else {
          say() << "the job has not ended " << kLostPeerGraceSeconds
                << " s after a peer was lost (a host cut off?); ending " << runner << "\n";
        }
        kill(pid, SIGTERM);
        ending_since = now();
      } else if (now() - ending_since > 5) {
        kill(pid, SIGKILL);
      }
    }
    if (!o.discovery_script.empty() && !asked && !stop_signal() && now() >= next) {
      rediscover(o, s);
      next = now() + o.discovery_interval_seconds;
      const int slots = total_slots(s->hosts);
      // In place, the job may run on fewer ranks than it started with (lost ones cut out): a slot
      // that comes back is room to grow into.
      const int running = output->in_place_size > 0 ? output->in_place_size : num_proc;
      const bool room = slots > total_slots(started_on) || running < num_proc;
      const int next_num_proc = attempt_num_proc(o, slots, attempt + 1);
      if (room && next_num_proc > running) {
        if (running < num_proc) {
          say() << "hosts " << hosts_text(s->hosts) << " have room for " << next_num_proc
                << " ranks while the job runs on " << running << " of its " << num_proc
                << " (lost ones cut out in place): asking the job to restart on them\n";
        } else {
          say() << "hosts changed (" << hosts_text(started_on) << " -> " << hosts_text(s->hosts)
                << "): asking the job to restart on them\n";
        }
        kill(pid, SIGUSR1);
        asked = true;
      }
    }
    output->wait_for_output(20);
  }
}

}  // namespace launcher
}  // namespace kolo
