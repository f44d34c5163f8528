// What started this process, read from the variables launchers give their processes, and what they say of
// the job: MPI's launchers (mpirun, kolorun, Slurm's srun --mpi=pmix, the MPI Operator), kolorun --gloo,
// torchrun, Ray Train, or the bare convention (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE) that Kubernetes
// manifests and shell loops use. The runtime picks its world by it (comm/world.h), and the Gloo world finds
// its store and its place through it.
#pragma once

#include <functional>
#include <string>

#include "kolo/status.h"

namespace kolo {

struct LauncherEnv {
  enum class Kind { kNone, kMpi, kKolorun, kTorchrun, kRay, kEnv };
  Kind kind = Kind::kNone;
  std::string name;  // for messages: "mpirun", "kolorun --gloo", "torchrun", "Ray Train", "MASTER_ADDR/..."
  // What the launcher says (-1: it says nothing): the rank, the job's size, and the place on the host.
  int rank = -1, size = -1, local_rank = -1, local_size = -1;
  // The Gloo world's key-value store: where, whether this process serves it (rank 0 of a bare launch) or
  // only connects (kolorun's, torchrun's agent's, Ray's rank 0's torch store), and the job's token for it.
  std::string store_host;
  int store_port = 0;
  bool serves_store = false;
  std::string token;
  // What names this job and its restart among others sharing the store (torchrun's run id, Ray's job id,
  // kolorun's job id); empty for a bare launch.
  std::string job_id;
};

using EnvLookup = std::function<const char*(const char* name)>;

// Reads the environment. A launcher's variables that do not fit (a rank out of range, a port that is not a
// number) are an error naming them.
Status read_launcher_env(const EnvLookup& env, LauncherEnv* out);

}  // namespace kolo
