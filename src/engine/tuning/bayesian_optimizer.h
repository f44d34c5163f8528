// Bayesian optimisation for the autotuner (KOLO_AUTOTUNE): which settings to try next on a live job,
// given the scores (bytes per second) of those tried so far. Scores are noisy and each costs seconds of
// training to measure, so a model that learns from every sample beats a grid or random search.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kolo {

// Gaussian-process regression over points of the unit cube [0,1]^d and expected improvement to choose the
// next point to sample, maximising a noisy score. Deterministic: the same seed and samples give the same
// points.
//
// The model: scores standardised to mean 0 and standard deviation 1, a zero-mean GP prior with a
// squared-exponential kernel of variance 1 and one length scale shared by every coordinate (chosen by
// marginal likelihood at each fit), and Gaussian noise. Fitting is O(n^3) in the number of samples, which
// an autotuner keeps to tens. Not thread-safe.
class BayesianOptimizer {
 public:
  // `noise`: the score's noise, as a share of its spread (added to the kernel's diagonal after the
  // scores are standardised): the noise's standard deviation over the scores', so noise^2 is what the
  // diagonal gets. Throws std::invalid_argument for dimensions < 1 or a negative or non-finite noise.
  // `initial_points` (at least 2): how many samples come from the quasi-random sequence before the model
  // chooses.
  BayesianOptimizer(int dimensions, uint64_t seed, double noise = 0.1, size_t initial_points = 2);

  int dimensions() const { return dimensions_; }

  // A sampled point (each coordinate clamped to [0,1]) and its score. Throws std::invalid_argument if x
  // has the wrong size, or x or the score is not finite.
  void add_sample(const std::vector<double>& x, double score);
  size_t samples() const { return scores_.size(); }

  // The point to sample next: with fewer than `initial_points` samples a quasi-random one (spread over the cube),
  // otherwise the maximum of expected improvement over the GP fitted to the samples so far.
  // A function of the seed and the samples alone: asking twice without a new sample gives the same point.
  std::vector<double> next_point();

  // From now on next_point() stays within `radius` of `centre` in every coordinate (and the cube): a
  // trust region, which a caller moves to its best point, widens while samples improve on it and narrows
  // when they do not. Without one, the whole cube.
  void set_region(const std::vector<double>& centre, double radius);

  // The sampled point whose GP posterior mean is highest (robust to one lucky noisy sample), and that mean
  // in the score's units. Requires samples() > 0 (else std::logic_error).
  std::vector<double> best_point() const;
  double best_mean() const;
  // Up to `k` distinct sampled points, highest posterior mean first, with that mean in the score's units.
  struct Ranked {
    std::vector<double> point;
    double mean = 0.0;
  };
  std::vector<Ranked> best_points(size_t k) const;

  // The kernel's length scale chosen by the latest fit (0 before the first sample), for logging.
  double length_scale() const { return length_scale_; }

 private:
  struct Posterior {
    double mean;
    double stddev;
  };

  void fit();
  // The GP posterior of the latent score at `x`, in standardised units; `kernel_row` and `solved` are
  // scratch of size samples(), kept by the caller so that a candidate costs no allocation.
  Posterior predict(const double* x, std::vector<double>& kernel_row, std::vector<double>& solved) const;
  bool is_sample(const double* x) const;
  std::vector<double> halton_point(uint64_t index) const;

  int dimensions_;
  uint64_t seed_;
  double noise_variance_;  // in standardised units
  size_t initial_points_;
  std::vector<double> low_, high_;  // the region next_point() keeps to
  std::vector<uint32_t> halton_bases_;

  std::vector<double> points_;  // samples() x dimensions_, row-major
  std::vector<double> scores_;

  // The fit to the current samples.
  double score_mean_ = 0.0;
  double score_scale_ = 1.0;
  double length_scale_ = 0.0;
  std::vector<double> cholesky_;         // lower triangle of K + noise I (+ jitter), row-major
  std::vector<double> alpha_;            // (K + noise I)^-1 y
  std::vector<double> posterior_means_;  // at each sample, standardised
  size_t best_index_ = 0;
};

}  // namespace kolo
