// Which world a job's ranks form (comm/world.h), and opening it: KOLO_CONTROLLER where it is given, else
// by what started the process (comm/launcher_env.h): an MPI launcher's process runs over MPI, any other
// over Gloo. A launcher's count of ranks that the world's disagrees with fails init(), naming both: never a
// silent world of one rank per process.
#pragma once

#include <memory>

#include "comm/launcher_env.h"
#include "comm/world.h"
#include "settings/config.h"

namespace kolo {

// Whether this kolo was built with the Gloo world (KOLO_WITH_GLOO).
bool gloo_built();

// The choice alone (pure, tested as a table): Gloo or MPI, or why neither can start here.
struct WorldChoice {
  bool gloo = false;
  Status refusal;
};
WorldChoice choose_world(Config::Controller controller, const LauncherEnv& env, bool gloo_built);
// Which world `config` and the process's launcher (read into *env) ask for: *gloo, or why none can start.
Status world_kind(const Config& config, LauncherEnv* env, bool* gloo);
// Opens it. Collective over the job's ranks.
Status open_world_of(bool gloo, const LauncherEnv& env, const Config& config, std::unique_ptr<World>* out);

}  // namespace kolo
