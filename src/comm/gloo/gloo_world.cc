#include "comm/gloo/gloo_world.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <numeric>
#include <thread>

#include "comm/gloo/gloo_context.h"
#include "comm/gloo/gloo_peer_watch.h"
#include "common/logging.h"

namespace kolo {

Status GlooWorld::open(const LauncherEnv& env, const GlooWorldOptions& options, std::unique_ptr<GlooWorld>* out) {
  std::unique_ptr<GlooWorld> w(new GlooWorld());
  w->env_ = env;
  Status s = rendezvous(env, options.timeout_seconds, &w->rendezvous_);
  if (s.ok()) s = GlooMesh::connect(w->rendezvous_, options.iface, options.timeout_seconds, &w->mesh_);
  if (!s.ok()) return s;
  *out = std::move(w);
  return Status::OK();
}

GlooWorld::~GlooWorld() {
  sets_.reset();
  mesh_.reset();
}

int GlooWorld::take_ids(int n) {
  const int first = next_id_;
  next_id_ += n;
  return first;
}

Status GlooWorld::open_job_context(const ContextOptions&, std::unique_ptr<Context>* out) {
  std::vector<int> everyone(static_cast<size_t>(size()));
  std::iota(everyone.begin(), everyone.end(), 0);
  *out = std::make_unique<GlooContext>(mesh_, everyone, rendezvous_.hosts, take_ids(GlooContext::kIds));
  return Status::OK();
}

Status GlooWorld::open_sets() {
  std::vector<int> everyone(static_cast<size_t>(size()));
  std::iota(everyone.begin(), everyone.end(), 0);
  sets_ = std::make_unique<GlooGroup>(mesh_, everyone, take_ids(1));
  return mesh_->broken();
}

Status GlooWorld::open_set_context(const std::vector<int>& ranks, const ContextOptions&, std::unique_ptr<Context>* out) {
  // Every rank takes the ids, members or not, so that the next context's are the same everywhere.
  const int first = take_ids(GlooContext::kIds);
  out->reset();
  if (!std::binary_search(ranks.begin(), ranks.end(), rank())) return Status::OK();
  *out = std::make_unique<GlooContext>(mesh_, ranks, rendezvous_.hosts, first);
  return mesh_->broken();
}

Status GlooWorld::start_watch(double timeout_seconds, PeerWatch::OnLost on_lost, std::unique_ptr<PeerWatch>* out) {
  std::unique_ptr<GlooPeerWatch> watch;
  Status s = GlooPeerWatch::start(rendezvous_, timeout_seconds, std::move(on_lost), &watch);
  if (s.ok()) *out = std::move(watch);
  watched_ = watched_ || s.ok();
  return s;
}

std::string GlooWorld::not_in_place() const {
  return "the Gloo world goes on without a lost peer only in an elastic job (not yet in this kolo)";
}

Status GlooWorld::shrink_to_survivors(std::vector<int>*) {
  return Status::Unsupported("recover_in_place: " + not_in_place());
}

bool GlooWorld::agree_and(int* bits) {
  *bits = 0;
  return false;
}

void GlooWorld::abort_job() {
  // Every launcher of the Gloo world (kolorun --gloo, torchrun, Ray, a pod's restart policy) ends or
  // restarts the job when a rank exits with an error.
  KOLO_LOG(kError, "ending this rank, " << rendezvous_.rank << " of the job, with status 1");
  std::_Exit(1);
}

void GlooWorld::finish(bool peer_lost) {
  // Rank 0 of a bare launch serves the store: the others' goodbyes reach it before it goes, so that none
  // takes the store's end for a loss (bounded: a rank that never says goodbye is lost anyway).
  if (peer_lost || !watched_ || !rendezvous_.server || !rendezvous_.store) return;
  std::vector<std::string> byes;
  for (int r = 0; r < size(); ++r) {
    if (r != rank()) byes.push_back(rendezvous_.prefix + "bye/" + std::to_string(r));
  }
  rendezvous_.store->wait(byes, KeyValueStore::Clock::now() + std::chrono::seconds(10));
}

}  // namespace kolo
