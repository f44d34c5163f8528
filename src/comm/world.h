// What a job's ranks run over, for the runtime (src/api/runtime.h): how they started and found each other,
// the contexts of the job and of its process sets (comm/context.h), the peer watch, and what a lost peer
// does. Two worlds: MPI (comm/mpi/mpi_world.h: mpirun, kolorun, Slurm) and Gloo (comm/gloo/: ranks started
// by any launcher, a key-value store for the rendezvous). The engine, the collectives and the device path
// see only contexts and groups; the runtime only this.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/context.h"
#include "comm/group.h"
#include "comm/peer_watch.h"

namespace kolo {

struct ContextOptions {
  bool doorbell = true;  // MPI across hosts: negotiation's waits sleep on a doorbell
};

class World {
 public:
  virtual ~World() = default;
  // "MPI" or "Gloo", for messages and the build summary.
  virtual const char* name() const = 0;
  // This rank and the job's size (after a recovery in place: among the survivors).
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Whether callers' threads may run collectives beside kolo's own thread (MPI: MPI_THREAD_MULTIPLE), which
  // blocking calls driving their own cycles, process sets and the peer watch need; else why not.
  virtual bool threads_multiple(std::string* why_not) const = 0;

  // The job's context (process set 0), over every rank. Collective.
  virtual Status open_job_context(const ContextOptions& options, std::unique_ptr<Context>* out) = 0;
  // Process sets are registered over a group of their own, spanning the job, one add or remove at a time:
  // opened by init() (collective), closed by shutdown(), and after a lost peer left to the transport.
  virtual Status open_sets() = 0;
  virtual Group& sets() = 0;
  virtual void close_sets(bool peer_lost) = 0;
  // A process set's context over `ranks` (job ranks, ascending); collective over the job (over sets()).
  // Null on a rank outside the set.
  virtual Status open_set_context(const std::vector<int>& ranks, const ContextOptions& options,
                                  std::unique_ptr<Context>* out) = 0;

  // The peer watch over the job: a silent peer reported to `on_lost`. Collective.
  virtual Status start_watch(double timeout_seconds, PeerWatch::OnLost on_lost, std::unique_ptr<PeerWatch>* out) = 0;

  // Whether a lost peer is survived in place: "" when it is, else why not (for messages).
  virtual std::string not_in_place() const = 0;
  // In place, after a loss: the survivors agree on who is left, and the world then spans them (rank() and
  // size() change). *survivors: their ranks before, in their new order. Collective over the survivors.
  virtual Status shrink_to_survivors(std::vector<int>* survivors) = 0;
  // The bitwise AND of every survivor's `bits`, the same on all of them even when a rank fails meanwhile
  // (ULFM's agreement); false where one did (each survivor then holds the same, partial AND). Collective
  // over the survivors, after shrink_to_survivors.
  virtual bool agree_and(int* bits) = 0;
  // While a survivor waits on something else during a recovery (a GPU library): one turn of the world's
  // own progress, so that its failure detector does not take this rank for lost.
  virtual void progress() {}
  // Ends every process of the job from this one (a rank stuck where nothing else reaches it).
  [[noreturn]] virtual void abort_job() = 0;
  // At the process's end, after kolo stopped: releases the transport (MPI_Finalize where kolo initialized
  // MPI), unless a peer was lost (which the release would wait for).
  virtual void finish(bool peer_lost) = 0;
};

}  // namespace kolo
