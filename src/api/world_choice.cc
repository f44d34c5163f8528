#include "api/world_choice.h"

#include <cstdlib>
#include <string>

#include "comm/launcher_env.h"
#include "comm/mpi/mpi_world.h"
#if KOLO_HAVE_GLOO
#include "comm/gloo/gloo_world.h"
#endif

namespace kolo {

bool gloo_built() {
#if KOLO_HAVE_GLOO
  return true;
#else
  return false;
#endif
}

WorldChoice choose_world(Config::Controller controller, const LauncherEnv& env, bool built) {
  using Kind = LauncherEnv::Kind;
  WorldChoice c;
  c.gloo = env.kind != Kind::kMpi;
  if (controller == Config::Controller::kMpi) c.gloo = false;
  if (controller == Config::Controller::kGloo) c.gloo = true;
  if (c.gloo && !built) {
    if (controller == Config::Controller::kGloo) {
      c.refusal = Status::Unsupported("init(): KOLO_CONTROLLER=gloo, but this kolo was built without Gloo "
                                      "(KOLO_WITH_GLOO; kolorun --check-build says what it was built with)");
      return c;
    }
    // No launcher at all: a job of one rank, over MPI as before.
    c.gloo = false;
    if (env.kind != Kind::kNone) {
      c.refusal = Status::Unsupported("init(): this process was started by " + env.name + " (WORLD_SIZE=" +
                                      std::to_string(env.size) + "), which only the Gloo world can join, and this kolo "
                                      "was built without Gloo (KOLO_WITH_GLOO): start the job with kolorun or mpirun");
    }
    return c;
  }
  if (c.gloo && env.kind == Kind::kMpi && (env.store_host.empty() || env.store_port <= 0 || env.size <= 0)) {
    c.refusal = Status::Unsupported("init(): KOLO_CONTROLLER=gloo, but " + env.name + " started this process and gives "
                                    "it no store to meet the others through: start it with kolorun --gloo or torchrun, "
                                    "or give MASTER_ADDR and MASTER_PORT (rank 0 serves the store there)");
  }
  return c;
}

Status world_kind(const Config& config, LauncherEnv* env, bool* gloo) {
  Status s = read_launcher_env([](const char* name) { return std::getenv(name); }, env);
  if (!s.ok()) return Status(s.code(), "init(): " + s.message());
  const WorldChoice choice = choose_world(config.controller, *env, gloo_built());
  *gloo = choice.gloo;
  return choice.refusal;
}

Status open_world_of(bool gloo, const LauncherEnv& env, const Config& config, std::unique_ptr<World>* out) {
  const std::string launched = env.kind == LauncherEnv::Kind::kNone ? std::string() : " (started by " + env.name + ")";
#if KOLO_HAVE_GLOO
  if (gloo) {
    std::unique_ptr<GlooWorld> world;
    Status s = GlooWorld::open(env, GlooWorldOptions{config.gloo_timeout_seconds, config.gloo_iface, config.gloo_in_place,
                                                     config.peer_timeout_seconds > 0 ? config.peer_timeout_seconds : 30.0}, &world);
    if (!s.ok()) return s;
    *out = std::move(world);
    return Status::OK();
  }
#else
  (void)gloo;
  (void)config;
#endif
  std::unique_ptr<MpiWorld> world;
  Status s = MpiWorld::open(&world);
  if (!s.ok()) return s;
  if (env.size > 0 && env.size != world->size()) {
    return Status::InvalidArgument("init() on rank " + std::to_string(world->rank()) + ": " + env.name + " says " +
                                   std::to_string(env.size) + " ranks (WORLD_SIZE), but kolo's MPI world has " +
                                   std::to_string(world->size()) + launched +
                                   "; an MPI world needs an MPI launcher (kolorun, mpirun), else leave KOLO_CONTROLLER "
                                   "unset for the Gloo world");
  }
  *out = std::move(world);
  return Status::OK();
}

}  // namespace kolo
