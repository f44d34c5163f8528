// The Gloo world (comm/world.h): ranks started by any launcher (kolorun --gloo, torchrun, Ray, a Kubernetes
// pod, a shell loop) meet through a key-value store (rendezvous.h), connect over Gloo's TCP transport
// (gloo_mesh.h), and run kolo's own collectives over it (comm/host/), the host's shared memory inside each
// host as under MPI. No MPI anywhere in the process. The peer watch goes through the store
// (gloo_peer_watch.h).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "comm/gloo/gloo_group.h"
#include "comm/gloo/gloo_mesh.h"
#include "comm/gloo/liveness.h"
#include "comm/gloo/rendezvous.h"
#include "comm/launcher_env.h"
#include "comm/world.h"

namespace kolo {

struct GlooWorldOptions {
  double timeout_seconds = 120;  // the start's bound (KOLO_GLOO_TIMEOUT_SECONDS)
  std::string iface;             // KOLO_GLOO_IFACE
  bool in_place = false;         // survivors of a lost rank go on (KOLO_GLOO_IN_PLACE; survivors.h)
  double lost_after_seconds = 30;  // in place: a rank silent this long is left out (KOLO_PEER_TIMEOUT_SECONDS)
};

class GlooWorld : public World {
 public:
  // Collective over the job's ranks, as the launcher's variables describe them.
  static Status open(const LauncherEnv& env, const GlooWorldOptions& options, std::unique_ptr<GlooWorld>* out);
  ~GlooWorld() override;

  const char* name() const override { return "Gloo"; }
  int rank() const override { return rendezvous_.rank; }
  int size() const override { return rendezvous_.size; }
  bool threads_multiple(std::string* why_not) const override { return true; }
  Status open_job_context(const ContextOptions& options, std::unique_ptr<Context>* out) override;
  Status open_sets() override;
  Group& sets() override { return *sets_; }
  void close_sets(bool peer_lost) override { sets_.reset(); }
  Status open_set_context(const std::vector<int>& ranks, const ContextOptions& options,
                          std::unique_ptr<Context>* out) override;
  Status start_watch(double timeout_seconds, PeerWatch::OnLost on_lost, std::unique_ptr<PeerWatch>* out) override;
  std::string not_in_place() const override;
  Status shrink_to_survivors(std::vector<int>* survivors) override;
  bool agree_and(int* bits) override;
  [[noreturn]] void abort_job() override;
  void finish(bool peer_lost) override;

 private:
  GlooWorld() = default;
  // Ids for a context's or a group's slots: every rank takes them in the same order (contexts and sets are
  // made collectively over the job).
  int take_ids(int n);

  // In place: the mesh's failures reported, and the report's revoker breaking it.
  void survive_failures_of(const std::shared_ptr<GlooMesh>& mesh);
  std::shared_ptr<GlooMesh> mesh() const;

  LauncherEnv env_;
  GlooWorldOptions options_;
  Rendezvous rendezvous_;  // after a recovery in place: the survivors' generation (prefix, ranks, hosts)
  std::string start_prefix_;
  std::string previous_prefix_;  // the generation's before the current one ("" before a recovery)
  mutable std::mutex mesh_mu_;  // mesh_ is read by the revoker, on whichever thread saw a failure
  std::shared_ptr<GlooMesh> mesh_;
  std::unique_ptr<Liveness> liveness_;  // in place only
  int generations_ = 0;                 // recoveries in place so far
  int and_rounds_ = 0;                  // agree_and calls in this generation
  std::unique_ptr<GlooGroup> sets_;
  int next_id_ = 1;
  bool watched_ = false;  // a peer watch started: every rank says goodbye through the store
};

}  // namespace kolo
