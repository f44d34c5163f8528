// One running attempt of an elastic job, watched: mpirun's standard output and error passed on and read
// for what kolorun acts on (the hosts a failure blames, a lost peer, the survivors in place, the ranks
// started); mpirun ended when it outlives the job, or asked to restart when the hosts have room for more ranks.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <set>
#include <string>

#include "elastic_hosts.h"
#include "in_place_reports.h"
#include "launch_options.h"

namespace kolo {
namespace launcher {

// One of mpirun's output streams, passed on to kolorun's own as it comes and cut into lines.
struct PassedStream {
  explicit PassedStream(int to_fd) : to(to_fd) {}
  int from = -1;  // the pipe from mpirun, non-blocking
  int to;         // kolorun's stream it is passed on to
  bool open = true;
  std::string line;
};

// mpirun's standard output and error, read line by line for what kolorun acts on. Both: kolo's ranks
// write on standard error, but Open MPI 5's mpirun reports a host it cannot reach on standard output.
struct OutputWatch {
  PassedStream out{STDOUT_FILENO};
  PassedStream err{STDERR_FILENO};
  std::set<std::string> blamed;
  double peer_lost_at = 0;  // when a rank's peer watch first reported a lost peer
  SurvivorExits survivors;  // in place: the survivors of a lost peer that said they exit
  int in_place_size = 0;    // in place: the job's size after its last recovery (0: none yet)
  double recovery_given_up_at = 0;  // in place: when a rank first said it gave up a recovery
  bool started = false;     // rank 0 said every rank of the attempt has started

  // Reads what is there on both streams without blocking; false once mpirun has closed both.
  bool pump();
  // Waits up to `ms` for more to read.
  void wait_for_output(int ms) const;
  void close_streams();

 private:
  void pump(PassedStream* stream);
  void take(const std::string& line);
};

// Waits for mpirun to end and returns its wait status. Meanwhile runs the script each interval and,
// the first time it finds room for more ranks than this attempt has, sends mpirun SIGUSR1, which
// Open MPI passes on to every rank: they commit and exit 75.
int watch(pid_t pid, const LaunchOptions& o, HostState* s, int num_proc, int attempt, OutputWatch* output);

}  // namespace launcher
}  // namespace kolo
