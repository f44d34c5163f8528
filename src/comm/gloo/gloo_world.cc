#include "comm/gloo/gloo_world.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <numeric>
#include <thread>

#include "comm/gloo/gloo_context.h"
#include "comm/gloo/gloo_peer_watch.h"
#include "comm/gloo/survivors.h"
#include "comm/peer_failure.h"
#include "common/logging.h"

namespace kolo {

Status GlooWorld::open(const LauncherEnv& env, const GlooWorldOptions& options, std::unique_ptr<GlooWorld>* out) {
  std::unique_ptr<GlooWorld> w(new GlooWorld());
  w->env_ = env;
  w->options_ = options;
  Status s = rendezvous(env, options.timeout_seconds, &w->rendezvous_);
  if (!s.ok()) return s;
  w->start_prefix_ = w->rendezvous_.prefix;
  if (options.in_place && w->rendezvous_.store) {
    // Ten beats per silence that counts as lost, at most one a second (as the peer watch's).
    s = Liveness::start(w->rendezvous_.store_host, w->rendezvous_.store_port, w->rendezvous_.token,
                        std::min(1.0, options.lost_after_seconds / 10), &w->liveness_);
    if (s.ok()) s = w->liveness_->enter(Generation{w->rendezvous_.prefix, w->rank(), w->size(), ""});
    if (!s.ok()) return s;
  }
  std::shared_ptr<GlooMesh> mesh;
  s = GlooMesh::connect(w->rendezvous_, options.iface, options.timeout_seconds, &mesh);
  if (!s.ok()) return s;
  if (options.in_place) {
    GlooWorld* world = w.get();
    set_peer_failure_revoker([world] {
      if (const auto m = world->mesh()) m->break_with(Status::PeersFailed(kPeersFailedWords), false);
    });
    w->survive_failures_of(mesh);
  }
  w->mesh_ = std::move(mesh);
  *out = std::move(w);
  return Status::OK();
}

GlooWorld::~GlooWorld() {
  if (options_.in_place) set_peer_failure_revoker(nullptr);
  sets_.reset();
  std::lock_guard<std::mutex> lock(mesh_mu_);
  mesh_.reset();
}

std::shared_ptr<GlooMesh> GlooWorld::mesh() const {
  std::lock_guard<std::mutex> lock(mesh_mu_);
  return mesh_;
}

void GlooWorld::survive_failures_of(const std::shared_ptr<GlooMesh>& mesh) {
  mesh->report_failures_to([](const std::string& what) { report_peer_failure("kolo's Gloo connections: " + what); });
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
  if (options_.in_place) return "";
  return "this Gloo world ends at a lost peer (kolorun --gloo --in-place, or KOLO_GLOO_IN_PLACE=1, makes its "
         "survivors go on)";
}

Status GlooWorld::shrink_to_survivors(std::vector<int>* survivors) {
  if (!options_.in_place || !rendezvous_.store) return Status::Unsupported("recover_in_place: " + not_in_place());
  const Generation failed{rendezvous_.prefix, rank(), size(), previous_prefix_};
  const std::string next = start_prefix_ + "g" + std::to_string(++generations_) + "/";
  SurvivorsAgreed agreed;
  Status s = agree_on_survivors(*rendezvous_.store, failed, next, options_.lost_after_seconds, &agreed);
  if (!s.ok()) return Status(s.code(), "recover_in_place on rank " + std::to_string(failed.rank) + ": " + s.message());
  // Every member takes the new generation, whether its connections form or not: a failure while they form
  // is recovered from this generation, the same on every member.
  std::vector<std::string> hosts;
  for (int m : agreed.members) hosts.push_back(rendezvous_.hosts[static_cast<size_t>(m)]);
  previous_prefix_ = failed.prefix;
  rendezvous_.prefix = next;
  rendezvous_.rank = static_cast<int>(std::find(agreed.members.begin(), agreed.members.end(), failed.rank) -
                                      agreed.members.begin());
  rendezvous_.size = static_cast<int>(agreed.members.size());
  rendezvous_.hosts = hosts;
  rendezvous_.nonce = agreed.nonce;
  and_rounds_ = 0;
  next_id_ = 1;
  *survivors = agreed.members;
  s = liveness_->enter(Generation{next, rank(), size(), failed.prefix});
  if (!s.ok()) return s;
  std::shared_ptr<GlooMesh> mesh;
  // A member lost after the agreement ends the wait for the connections at once, rather than at its bound.
  KeyValueStore& store = *rendezvous_.store;
  s = GlooMesh::connect(rendezvous_, options_.iface, std::max(10.0, options_.lost_after_seconds), &mesh,
                        [&store, failed, members = agreed.members] { return members_still_there(store, failed, members); });
  if (!s.ok()) {
    return Status::PeersFailed("recover_in_place: the survivors' connections did not form (" + s.message() +
                               "): another peer lost meanwhile? (" + kPeersFailedWords + ")");
  }
  survive_failures_of(mesh);
  std::lock_guard<std::mutex> lock(mesh_mu_);
  mesh_ = std::move(mesh);
  return Status::OK();
}

bool GlooWorld::agree_and(int* bits) {
  if (!rendezvous_.store) return true;  // a job of one rank
  return agree_and_through_store(*rendezvous_.store, Generation{rendezvous_.prefix, rank(), size(), previous_prefix_}, and_rounds_++,
                                 options_.lost_after_seconds, bits);
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
