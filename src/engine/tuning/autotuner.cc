#include "engine/tuning/autotuner.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/logging.h"
#include "engine/tuning/bayesian_optimizer.h"

namespace kolo {
namespace {

constexpr uint64_t kSeed = 0x6b6f6c6f;  // fixed: a job's search can be replayed from its log
// The trust region's half-width, in the unit cube's coordinates (0.25: two doublings of the fusion
// threshold either way).
constexpr double kMinRadius = 0.06, kMaxRadius = 0.5;

// Sizes are searched on a log scale (from 1 MiB, a fusion threshold of 2 MiB differs from 1 MiB as
// 128 MiB from 64 MiB) and rounded to `quantum`, so the log reads in whole units.
double log_position(int64_t v, int64_t lo, int64_t hi) {
  const double p = (std::log2(static_cast<double>(std::max<int64_t>(v, 1))) - std::log2(static_cast<double>(lo))) /
                   (std::log2(static_cast<double>(hi)) - std::log2(static_cast<double>(lo)));
  return std::min(1.0, std::max(0.0, p));
}

int64_t log_value(double x, int64_t lo, int64_t hi, int64_t quantum) {
  const double v = std::exp2(std::log2(static_cast<double>(lo)) +
                             x * (std::log2(static_cast<double>(hi)) - std::log2(static_cast<double>(lo))));
  const int64_t q = std::max<int64_t>(1, static_cast<int64_t>(std::llround(v / static_cast<double>(quantum))));
  return std::min(hi, std::max(lo, q * quantum));
}

}  // namespace

std::string TunedSettings::describe() const {
  std::ostringstream o;
  o << "fusion threshold " << fusion_threshold_bytes << " B, segment " << segment_bytes << " B, zero copy from "
    << zero_copy_bytes << " B, " << (hierarchical_allreduce ? "hierarchical" : "flat") << " allreduce";
  return o.str();
}

Autotuner::Autotuner(const Config::Autotune& options, const TunedSettings& start, bool tune_hierarchy, int rank)
    : options_(options), rank_(rank), tune_hierarchy_(tune_hierarchy), start_(start), current_(start) {
  if (!options.fixed_fusion_threshold) dims_.push_back(Dim::kFusion);
  if (!options.fixed_segment) dims_.push_back(Dim::kSegment);
  if (!options.fixed_zero_copy) dims_.push_back(Dim::kZeroCopy);
  if (dims_.empty() && !tune_hierarchy) done_ = true;  // every setting was given explicitly
  if (rank_ != 0) return;
  if (!done_) {
    // With every size fixed, each choice's optimiser models one point (its mean score) in a dimension of
    // its own.
    const int d = std::max<int>(1, static_cast<int>(dims_.size()));
    for (int c = 0; c < (tune_hierarchy ? 2 : 1); ++c) {
      // d + 1 points spread over the sizes before the model chooses (the first of flat's is the start).
      optimizers_.push_back(std::make_unique<BayesianOptimizer>(d, kSeed + static_cast<uint64_t>(c), options.noise,
                                                                static_cast<size_t>(d) + 1));
      regions_.push_back(Region{});
      optimizers_.back()->set_region(point_of(start), regions_.back().radius);
    }
  }
  if (!options.log_path.empty()) {
    log_.open(options.log_path, std::ios::out | std::ios::trunc);
    if (!log_) {
      KOLO_LOG(kWarning, "KOLO_AUTOTUNE_LOG: cannot write '" << options.log_path << "'; tuning without a log");
    } else {
      log_ << "sample,phase,fusion_threshold_bytes,segment_bytes,zero_copy_bytes,hierarchical_allreduce,steps,bytes,"
              "seconds,score_bytes_per_second\n";
      log_.flush();
    }
  }
  if (done_) KOLO_LOG(kInfo, "KOLO_AUTOTUNE: every tuned setting was given explicitly; nothing to tune");
}

Autotuner::~Autotuner() = default;

void Autotuner::observe(const Response& response, double now) {
  if (done_ || ended_ || !response.ok()) return;
  if (!step_names_.insert(response.name).second) {
    // The name recurs: a step ended just before this op.
    step_names_.clear();
    step_names_.insert(response.name);
    if (!measuring_) {
      measuring_ = true;
      started_at_ = now;
      steps_ = bytes_ = 0;
    } else {
      ++steps_;
      bytes_ += step_bytes_;
      if (steps_ >= options_.steps_per_sample) {
        ended_ = true;
        ended_at_ = now;
      }
    }
    step_bytes_ = 0;
  }
  step_bytes_ += response.size_bytes();
}

std::vector<double> Autotuner::point_of(const TunedSettings& s) const {
  std::vector<double> x;
  for (Dim d : dims_) {
    switch (d) {
      case Dim::kFusion:
        x.push_back(log_position(s.fusion_threshold_bytes, kMinFusion, kMaxFusion));
        break;
      case Dim::kSegment:
        x.push_back(log_position(s.segment_bytes, kMinSegment, kMaxSegment));
        break;
      case Dim::kZeroCopy:
        x.push_back(log_position(s.zero_copy_bytes, kMinZeroCopy, kMaxZeroCopy));
        break;
    }
  }
  if (x.empty()) x.push_back(0.5);
  return x;
}

TunedSettings Autotuner::settings_at(const std::vector<double>& x, bool hierarchical) const {
  TunedSettings s = current_;
  s.hierarchical_allreduce = tune_hierarchy_ ? hierarchical : current_.hierarchical_allreduce;
  for (size_t i = 0; i < dims_.size(); ++i) {
    switch (dims_[i]) {
      case Dim::kFusion:
        s.fusion_threshold_bytes = log_value(x[i], kMinFusion, kMaxFusion, 1ll << 20);
        break;
      case Dim::kSegment:
        s.segment_bytes = log_value(x[i], kMinSegment, kMaxSegment, 64ll << 10);
        break;
      case Dim::kZeroCopy:
        s.zero_copy_bytes = log_value(x[i], kMinZeroCopy, kMaxZeroCopy, 64ll << 10);
        break;
    }
  }
  return s;
}

size_t Autotuner::next_choice() const {
  if (optimizers_.size() == 1) return 0;
  // The first half of the samples alternate, so that each choice's optimiser has a few points; then the
  // choice whose best is ahead gets the rest.
  const int64_t alternating = std::max<int64_t>(4, options_.max_samples / 2);
  if (scored_ < alternating || optimizers_[0]->samples() == 0 || optimizers_[1]->samples() == 0) {
    return optimizers_[0]->samples() <= optimizers_[1]->samples() ? 0 : 1;
  }
  return leading_choice();
}

size_t Autotuner::leading_choice() const {
  size_t best = 0;
  for (size_t c = 1; c < optimizers_.size(); ++c) {
    if (optimizers_[c]->samples() > 0 &&
        (optimizers_[best]->samples() == 0 || optimizers_[c]->best_mean() > optimizers_[best]->best_mean())) {
      best = c;
    }
  }
  return best;
}

void Autotuner::log_row(const char* phase, int64_t sample, const TunedSettings& s, double seconds, double score) {
  if (!log_.is_open()) return;
  log_ << sample << ',' << phase << ',' << s.fusion_threshold_bytes << ',' << s.segment_bytes << ','
       << s.zero_copy_bytes << ',' << (s.hierarchical_allreduce ? 1 : 0) << ',' << steps_ << ',' << bytes_ << ','
       << seconds << ',' << score << '\n';
  log_.flush();
}

std::string Autotuner::decide() {
  const double seconds = ended_at_ - started_at_;
  const double score = seconds > 0 ? static_cast<double>(bytes_) / seconds : 0.0;
  const int64_t sample = samples_;
  TunedSettings next = current_;
  bool finished = false;
  if (sample < options_.warmup_samples) {
    log_row("warmup", sample, current_, seconds, score);
  } else {
    log_row(confirming_now_ ? "confirm" : "sample", sample, current_, seconds, score);
    const size_t choice = optimizers_.size() == 1 ? 0 : (current_.hierarchical_allreduce ? 1 : 0);
    BayesianOptimizer& o = *optimizers_[choice];
    const bool improved = o.samples() == 0 || score > o.best_mean();
    o.add_sample(point_of(current_), score);
    ++scored_;
    Region& region = regions_[choice];
    if (improved) {
      region.radius = std::min(kMaxRadius, region.radius * 1.5);
      region.misses = 0;
    } else if (++region.misses >= 2) {
      region.radius = std::max(kMinRadius, region.radius * 0.6);
      region.misses = 0;
    }
    o.set_region(o.best_point(), region.radius);
    if (!confirming_started_ && scored_ >= options_.max_samples) {
      // The best few are measured once more before one is kept: with noisy samples the best-looking
      // point is often a lucky one (the winner's curse), and a second sample pulls its mean back.
      std::vector<std::pair<double, TunedSettings>> top;
      for (size_t c = 0; c < optimizers_.size(); ++c) {
        for (const BayesianOptimizer::Ranked& r : optimizers_[c]->best_points(kConfirmed)) {
          top.emplace_back(r.mean, settings_at(r.point, c == 1));
        }
      }
      std::stable_sort(top.begin(), top.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
      for (size_t i = 0; i < top.size() && i < kConfirmed; ++i) to_confirm_.push_back(top[i].second);
      confirming_started_ = true;
    }
    confirming_now_ = false;
    if (confirming_started_ && to_confirm_.empty()) {
      const size_t best = leading_choice();
      next = settings_at(optimizers_[best]->best_point(), best == 1);
      finished = true;
      steps_ = bytes_ = 0;
      log_row("kept", sample + 1, next, 0.0, optimizers_[best]->best_mean());
      KOLO_LOG(kInfo, "KOLO_AUTOTUNE kept " << next.describe() << " (expected " << optimizers_[best]->best_mean() / 1e6
                                            << " MB/s after " << scored_ << " samples)");
    } else if (confirming_started_) {
      next = to_confirm_.front();
      to_confirm_.erase(to_confirm_.begin());
      confirming_now_ = true;
    } else {
      const size_t c = next_choice();
      // The other choice is first tried at the starting sizes, so that the two differ only in it.
      next = optimizers_[c]->samples() == 0 ? settings_at(point_of(start_), c == 1)
                                            : settings_at(optimizers_[c]->next_point(), c == 1);
    }
  }
  std::ostringstream o;
  o << next.fusion_threshold_bytes << ' ' << next.segment_bytes << ' ' << next.zero_copy_bytes << ' '
    << (next.hierarchical_allreduce ? 1 : 0) << ' ' << (finished ? 1 : 0);
  return o.str();
}

Status Autotuner::adopt(const std::string& decision) {
  std::istringstream in(decision);
  TunedSettings next;
  int hierarchical = 0, finished = 0;
  if (!(in >> next.fusion_threshold_bytes >> next.segment_bytes >> next.zero_copy_bytes >> hierarchical >>
        finished)) {
    return Status::Internal("KOLO_AUTOTUNE: rank 0's decision '" + decision + "' cannot be read");
  }
  next.hierarchical_allreduce = hierarchical != 0;
  changed_ = changed_ || next.fusion_threshold_bytes != current_.fusion_threshold_bytes ||
             next.segment_bytes != current_.segment_bytes || next.zero_copy_bytes != current_.zero_copy_bytes ||
             next.hierarchical_allreduce != current_.hierarchical_allreduce;
  current_ = next;
  done_ = finished != 0;
  ++samples_;
  ended_ = measuring_ = false;
  step_names_.clear();
  return Status::OK();
}

bool Autotuner::take_change(TunedSettings* next) {
  if (!changed_) return false;
  changed_ = false;
  *next = current_;
  return true;
}

}  // namespace kolo
