// KOLO_AUTOTUNE: tunes the fusion threshold, the segment and zero-copy sizes and, across hosts, flat or
// hierarchical allreduce on the running job, as Horovod's HOROVOD_AUTOTUNE does: each sample runs some
// steps at one setting and scores it by the bytes reduced per second; after warm-up samples, Bayesian
// optimisation picks the next setting to try; after a bounded number of samples the best few are measured
// once more and the best is kept.
// Flat or hierarchical is a choice of two, not a scale: each has an optimiser of its own over the sizes,
// the first samples alternate between them, and the rest go to the one whose best is ahead.
//
// Every rank must apply the same settings at the same cycle (ranks fusing differently would run
// different collectives). So samples end where the agreed responses say (a step ends where a name seen
// since it began recurs: the same on every rank), rank 0 alone scores and decides, and its decision
// reaches every rank through the negotiation's broadcast at that cycle (Engine).
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "comm/topology.h"
#include "settings/config.h"
#include "engine/message.h"
#include "kolo/status.h"

namespace kolo {

class BayesianOptimizer;

struct TunedSettings {
  int64_t fusion_threshold_bytes = 0;
  int64_t segment_bytes = 0;
  int64_t zero_copy_bytes = 0;
  bool hierarchical_allreduce = false;

  std::string describe() const;
};

class Autotuner {
 public:
  // Whether flat or hierarchical allreduce is one of the choices: hierarchical can run (the job spans
  // hosts with as many ranks on each) and was not given explicitly.
  static bool tunes_hierarchy(const Config& config, const Topology& topology) {
    return kolo::tunes_hierarchy(job_shape(topology, true), allreduce_settings(config));
  }

  // `start`: the settings the job starts with. `tune_hierarchy`: flat or hierarchical is a choice (the
  // job spans hosts with as many ranks on each). `rank` 0 decides and writes the log.
  Autotuner(const Config::Autotune& options, const TunedSettings& start, bool tune_hierarchy, int rank);
  ~Autotuner();

  // Every rank, for each response its cycle agreed on, in order, at the cycle's time.
  void observe(const Response& response, double now);
  // Whether a sample ended with what was observed: rank 0's decide() must now reach every rank's adopt().
  bool sample_ended() const { return ended_; }
  // Rank 0: scores the sample that ended, picks the next settings, logs; the decision, encoded.
  std::string decide();
  // Every rank: takes up rank 0's decision; the next cycle applies it (take_change).
  Status adopt(const std::string& decision);
  // The settings to apply before the next cycle, once per decision that changed them.
  bool take_change(TunedSettings* next);
  // The search is over and its best setting kept.
  bool done() const { return done_; }
  const TunedSettings& current() const { return current_; }

  // The bounds of the search, in bytes.
  static constexpr int64_t kMinFusion = 1ll << 20, kMaxFusion = 256ll << 20;
  static constexpr int64_t kMinSegment = 256ll << 10, kMaxSegment = 64ll << 20;
  static constexpr int64_t kMinZeroCopy = 64ll << 10, kMaxZeroCopy = 64ll << 20;

 private:
  enum class Dim { kFusion, kSegment, kZeroCopy };
  std::vector<double> point_of(const TunedSettings& s) const;
  TunedSettings settings_at(const std::vector<double>& x, bool hierarchical) const;
  // Which optimiser the next sample belongs to.
  size_t next_choice() const;
  // The optimiser whose best modelled score is highest, among those with samples.
  size_t leading_choice() const;
  void log_row(const char* phase, int64_t sample, const TunedSettings& s, double seconds, double score);

  const Config::Autotune options_;
  const int rank_;
  std::vector<Dim> dims_;  // the sizes tuned
  // Rank 0: an optimiser for each choice of allreduce (flat; hierarchical when that is tuned), indexed by
  // whether it is hierarchical when both are, else the one.
  std::vector<std::unique_ptr<BayesianOptimizer>> optimizers_;
  const bool tune_hierarchy_;
  int64_t scored_ = 0;  // samples given to an optimiser
  // Each optimiser searches a region around its best point (first the starting sizes): a job's defaults
  // are a fair guess, and a few noisy samples cannot map a cube of sizes spanning orders of magnitude.
  // The region widens while samples improve on the best and narrows when two in a row do not.
  struct Region {
    double radius = 0.25;
    int misses = 0;
  };
  std::vector<Region> regions_;
  // After the last sample the optimisers chose: the best few, measured once more before one is kept.
  static constexpr size_t kConfirmed = 3;
  std::vector<TunedSettings> to_confirm_;
  bool confirming_started_ = false, confirming_now_ = false;
  std::ofstream log_;                              // rank 0, with a log path
  const TunedSettings start_;
  TunedSettings current_;
  bool changed_ = false;
  bool done_ = false;
  // The sample under way: it starts at the first step boundary after a decision.
  std::unordered_set<std::string> step_names_;
  bool measuring_ = false;
  bool ended_ = false;
  double started_at_ = 0, ended_at_ = 0;
  int64_t steps_ = 0, bytes_ = 0, step_bytes_ = 0;
  int64_t samples_ = 0;  // ended so far, warm-up included
};

}  // namespace kolo
