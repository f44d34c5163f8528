#include "comm/launcher_env.h"

#include <cerrno>
#include <cstdlib>
#include <string>

namespace kolo {
namespace {

// -1 where unset; an error where set and not a non-negative integer.
Status read_int(const EnvLookup& env, const char* name, int* out) {
  const char* v = env(name);
  *out = -1;
  if (v == nullptr || *v == '\0') return Status::OK();
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(v, &end, 10);
  if (errno != 0 || *end != '\0' || n < 0 || n > (1 << 30)) {
    return Status::InvalidArgument(std::string(name) + "='" + v + "' is not a rank count or index");
  }
  *out = static_cast<int>(n);
  return Status::OK();
}

bool set(const EnvLookup& env, const char* name) {
  const char* v = env(name);
  return v != nullptr && *v != '\0';
}

std::string value(const EnvLookup& env, const char* name) {
  const char* v = env(name);
  return v == nullptr ? std::string() : std::string(v);
}

// RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE, and the store at MASTER_ADDR:MASTER_PORT.
Status read_torch_convention(const EnvLookup& env, LauncherEnv* out) {
  Status s = read_int(env, "RANK", &out->rank);
  // A Kubernetes indexed Job (or a JobSet's) numbers its pods: one rank per pod, where RANK is not given.
  if (s.ok() && out->rank < 0) s = read_int(env, "JOB_COMPLETION_INDEX", &out->rank);
  if (s.ok()) s = read_int(env, "WORLD_SIZE", &out->size);
  if (s.ok()) s = read_int(env, "LOCAL_RANK", &out->local_rank);
  if (s.ok()) s = read_int(env, "LOCAL_WORLD_SIZE", &out->local_size);
  if (!s.ok()) return s;
  out->store_host = value(env, "MASTER_ADDR");
  int port = -1;
  s = read_int(env, "MASTER_PORT", &port);
  if (!s.ok()) return s;
  out->store_port = port;
  return Status::OK();
}

}  // namespace

Status read_launcher_env(const EnvLookup& env, LauncherEnv* out) {
  *out = LauncherEnv();
  using Kind = LauncherEnv::Kind;
  // MPI's launchers first: an mpirun job keeps running on MPI whatever else its environment holds.
  if (set(env, "OMPI_COMM_WORLD_SIZE") || set(env, "PMIX_RANK") || set(env, "PMI_RANK") || set(env, "PMI_SIZE")) {
    out->kind = Kind::kMpi;
    out->name = set(env, "OMPI_COMM_WORLD_SIZE") ? "mpirun" : set(env, "SLURM_JOB_ID") ? "srun" : "an MPI launcher";
    Status s = read_int(env, "OMPI_COMM_WORLD_SIZE", &out->size);
    if (s.ok()) s = read_int(env, "OMPI_COMM_WORLD_RANK", &out->rank);
    if (s.ok() && out->rank < 0) s = read_int(env, "PMIX_RANK", &out->rank);
    if (s.ok() && out->rank < 0) s = read_int(env, "PMI_RANK", &out->rank);
    if (s.ok() && out->size < 0) s = read_int(env, "PMI_SIZE", &out->size);
    if (s.ok() && out->size < 0) s = read_int(env, "SLURM_NTASKS", &out->size);
    if (s.ok() && out->local_rank < 0) s = read_int(env, "OMPI_COMM_WORLD_LOCAL_RANK", &out->local_rank);
    // A store given beside (MASTER_ADDR, MASTER_PORT) lets KOLO_CONTROLLER=gloo form a Gloo world of an MPI
    // launcher's processes, rank 0 serving the store.
    out->store_host = value(env, "MASTER_ADDR");
    int port = -1;
    if (s.ok()) s = read_int(env, "MASTER_PORT", &port);
    out->store_port = port;
    out->serves_store = out->rank == 0;
    return s;
  }
  Status s;
  if (set(env, "KOLO_STORE_ADDR")) {
    out->kind = Kind::kKolorun;
    // kolo.ray (RayExecutor, Ray Train's KoloConfig) gives Ray's workers kolorun's variables, serving the store.
    out->name = set(env, "RAY_RAYLET_PID") || set(env, "RAY_JOB_ID") ? "kolo.ray" : "kolorun --gloo";
    s = read_torch_convention(env, out);
    if (!s.ok()) return s;
    out->store_host = value(env, "KOLO_STORE_ADDR");
    int port = -1;
    s = read_int(env, "KOLO_STORE_PORT", &port);
    out->store_port = port;
    out->token = value(env, "KOLO_STORE_TOKEN");
    out->job_id = value(env, "KOLO_JOB_ID");
    // kolorun --gloo inside a Slurm allocation starts every rank with one srun: Slurm numbers them.
    if (s.ok() && out->rank < 0) s = read_int(env, "SLURM_PROCID", &out->rank);
    if (s.ok() && out->local_rank < 0) s = read_int(env, "SLURM_LOCALID", &out->local_rank);
  } else if (set(env, "TORCHELASTIC_RUN_ID")) {
    out->kind = Kind::kTorchrun;
    out->name = "torchrun";
    s = read_torch_convention(env, out);
    // The agent's store, never bound here: torchrun serves it (TORCHELASTIC_USE_AGENT_STORE=True); where
    // the agent was told not to share it, rank 0 serves it as a bare launch's does.
    out->serves_store = value(env, "TORCHELASTIC_USE_AGENT_STORE") != "True" && out->rank == 0;
    out->job_id = "torchrun-" + value(env, "TORCHELASTIC_RUN_ID");
  } else if ((set(env, "RAY_RAYLET_PID") || set(env, "RAY_JOB_ID")) && set(env, "MASTER_ADDR")) {
    out->kind = Kind::kRay;
    out->name = "Ray Train";
    s = read_torch_convention(env, out);
    // Ray has made torch's process group already: its rank 0 serves the store.
    out->job_id = "ray-" + value(env, "RAY_JOB_ID");
  } else if (set(env, "WORLD_SIZE") || set(env, "MASTER_ADDR")) {
    out->kind = Kind::kEnv;
    out->name = "MASTER_ADDR/MASTER_PORT/RANK/WORLD_SIZE";
    s = read_torch_convention(env, out);
    out->serves_store = out->rank == 0;
    out->token = value(env, "KOLO_STORE_TOKEN");
  }
  if (!s.ok()) return s;
  if (out->kind == Kind::kNone) return Status::OK();
  // What the world needs of these launchers, checked here so that a bad launch fails at once, saying which.
  const std::string by = " (the job was started by " + out->name + ")";
  if (out->size <= 0) return Status::InvalidArgument("WORLD_SIZE is not set to a positive rank count" + by);
  if (out->rank < 0 || out->rank >= out->size) {
    // Named as given: the rank may have come from a launcher's own variable (an indexed Job's pod index).
    const char* given = "RANK";
    for (const char* name : {"RANK", "JOB_COMPLETION_INDEX", "SLURM_PROCID"}) {
      if (set(env, name)) {
        given = name;
        break;
      }
    }
    return Status::InvalidArgument(std::string(given) + "=" + value(env, given) + " is not a rank of WORLD_SIZE=" +
                                   std::to_string(out->size) + by);
  }
  if (out->size > 1 && (out->store_host.empty() || out->store_port <= 0 || out->store_port > 65535)) {
    return Status::InvalidArgument(std::string(out->kind == Kind::kKolorun ? "KOLO_STORE_ADDR and KOLO_STORE_PORT"
                                                                           : "MASTER_ADDR and MASTER_PORT") +
                                   " must name the job's store (a host and a port from 1 to 65535)" + by);
  }
  return Status::OK();
}

}  // namespace kolo
