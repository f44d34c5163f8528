#include "engine/tuning/bayesian_optimizer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

namespace kolo {

namespace {

// Length scales tried at each fit, in units of the cube's side. 0.05 resolves a setting's neighbours
// (a step between categorical values), 1.3 is all but linear across the cube (a monotone trend, as
// "bigger buffers are better" often is); the ratio between neighbours stays under 2, so the chosen one
// is never far from the likelihood's optimum. A grid rather than gradient ascent keeps the fit
// deterministic and cheap.
constexpr double kLengthScales[] = {0.05, 0.1, 0.2, 0.35, 0.5, 0.8, 1.3};

// Exploration margin of expected improvement, in standardised units: improvements smaller than a
// hundredth of the scores' spread are not worth a sample.
constexpr double kXi = 0.01;

// Candidates for the maximum of expected improvement: uniform over the cube (finds unexplored regions),
// around the samples with the best posterior means (improves on the incumbent), then around the best
// candidate with a shrinking radius (sharpens the answer). With 30 samples in 4 dimensions each costs a
// microsecond or so.
constexpr int kGlobalCandidates = 1024;
constexpr int kLocalCentres = 4;
constexpr int kLocalCandidatesPerCentre = 64;
constexpr double kLocalRadii[] = {0.5, 0.15, 0.05};  // in length scales, taken in turn
constexpr int kRefineRounds = 4;
constexpr int kRefineCandidatesPerRound = 32;
constexpr double kRefineFirstRadius = 0.25;  // in length scales, halved each round

// Added to the kernel's diagonal, relative to it, when Cholesky fails (duplicate points with no noise,
// or rounding). The last always succeeds for finite inputs: the kernel is positive semidefinite.
constexpr double kJitters[] = {0.0, 1e-10, 1e-8, 1e-6, 1e-4, 1e-2, 1.0};

// SplitMix64's finaliser: spreads a seed's bits so that nearby seeds give unrelated streams.
uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// From the generator's bits rather than std::uniform_real_distribution, whose output the standard leaves
// to the library: the same seed then gives the same points with any compiler.
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

double clamp01(double v) { return std::min(1.0, std::max(0.0, v)); }

double squared_distance(const double* a, const double* b, int d) {
  double sum = 0.0;
  for (int k = 0; k < d; ++k) {
    const double diff = a[k] - b[k];
    sum += diff * diff;
  }
  return sum;
}

// In-place Cholesky of the n x n symmetric positive definite row-major `a`: the lower triangle becomes L
// (a = L L^T); the upper is left as it was and never read. False if a pivot is not positive.
bool cholesky(std::vector<double>& a, size_t n) {
  for (size_t j = 0; j < n; ++j) {
    double pivot = a[j * n + j];
    for (size_t k = 0; k < j; ++k) pivot -= a[j * n + k] * a[j * n + k];
    if (!(pivot > 0.0)) return false;  // also catches NaN
    pivot = std::sqrt(pivot);
    a[j * n + j] = pivot;
    for (size_t i = j + 1; i < n; ++i) {
      double v = a[i * n + j];
      for (size_t k = 0; k < j; ++k) v -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = v / pivot;
    }
  }
  return true;
}

// Solves L x = b in place.
void solve_lower(const std::vector<double>& l, size_t n, std::vector<double>& b) {
  for (size_t i = 0; i < n; ++i) {
    double v = b[i];
    for (size_t k = 0; k < i; ++k) v -= l[i * n + k] * b[k];
    b[i] = v / l[i * n + i];
  }
}

// Solves L^T x = b in place.
void solve_upper_transposed(const std::vector<double>& l, size_t n, std::vector<double>& b) {
  for (size_t i = n; i-- > 0;) {
    double v = b[i];
    for (size_t k = i + 1; k < n; ++k) v -= l[k * n + i] * b[k];
    b[i] = v / l[i * n + i];
  }
}

// The standard normal's density and distribution. erfc rather than 1 + erf keeps the lower tail's
// relative precision, where expected improvement far below the incumbent still ranks candidates.
double normal_pdf(double z) { return 0.3989422804014327 * std::exp(-0.5 * z * z); }
double normal_cdf(double z) { return 0.5 * std::erfc(-z * 0.7071067811865476); }

double expected_improvement(double mean, double stddev, double incumbent) {
  const double improvement = mean - incumbent - kXi;
  if (stddev < 1e-12) return std::max(improvement, 0.0);
  const double z = improvement / stddev;
  // Can round to a hair below zero far in the lower tail.
  return std::max(improvement * normal_cdf(z) + stddev * normal_pdf(z), 0.0);
}

std::vector<uint32_t> first_primes(int count) {
  std::vector<uint32_t> primes;
  for (uint32_t candidate = 2; static_cast<int>(primes.size()) < count; ++candidate) {
    bool prime = true;
    for (uint32_t p : primes) {
      if (p * p > candidate) break;
      if (candidate % p == 0) {
        prime = false;
        break;
      }
    }
    if (prime) primes.push_back(candidate);
  }
  return primes;
}

}  // namespace

BayesianOptimizer::BayesianOptimizer(int dimensions, uint64_t seed, double noise, size_t initial_points)
    : dimensions_(dimensions), seed_(seed), noise_variance_(noise * noise),
      initial_points_(std::max<size_t>(2, initial_points)) {
  if (dimensions < 1) {
    throw std::invalid_argument("BayesianOptimizer: dimensions must be at least 1, not " +
                                std::to_string(dimensions));
  }
  if (!std::isfinite(noise) || noise < 0.0) {
    throw std::invalid_argument("BayesianOptimizer: noise must be finite and non-negative");
  }
  halton_bases_ = first_primes(dimensions);
  low_.assign(static_cast<size_t>(dimensions), 0.0);
  high_.assign(static_cast<size_t>(dimensions), 1.0);
}

void BayesianOptimizer::set_region(const std::vector<double>& centre, double radius) {
  if (centre.size() != static_cast<size_t>(dimensions_) || !(radius > 0.0)) {
    throw std::invalid_argument("BayesianOptimizer::set_region: a centre of " + std::to_string(dimensions_) +
                                " coordinates and a positive radius");
  }
  for (int k = 0; k < dimensions_; ++k) {
    low_[k] = clamp01(centre[k] - radius);
    high_[k] = clamp01(centre[k] + radius);
  }
}

void BayesianOptimizer::add_sample(const std::vector<double>& x, double score) {
  if (x.size() != static_cast<size_t>(dimensions_)) {
    throw std::invalid_argument("BayesianOptimizer::add_sample: point has " + std::to_string(x.size()) +
                                " coordinates, the optimizer " + std::to_string(dimensions_));
  }
  if (!std::isfinite(score)) throw std::invalid_argument("BayesianOptimizer::add_sample: score is not finite");
  for (double v : x) {
    // NaN would survive clamping; infinities would not, but come from the same kind of bug.
    if (!std::isfinite(v)) throw std::invalid_argument("BayesianOptimizer::add_sample: point is not finite");
  }
  for (double v : x) points_.push_back(clamp01(v));
  scores_.push_back(score);
  // Fitting here rather than lazily keeps best_point() and best_mean() const and cheap.
  fit();
}

void BayesianOptimizer::fit() {
  const size_t n = scores_.size();
  const int d = dimensions_;

  score_mean_ = std::accumulate(scores_.begin(), scores_.end(), 0.0) / static_cast<double>(n);
  double sum_squares = 0.0;
  for (double s : scores_) sum_squares += (s - score_mean_) * (s - score_mean_);
  score_scale_ = std::sqrt(sum_squares / static_cast<double>(n));
  // Equal scores leave a spread of rounding error: dividing by it would turn that into signal.
  if (!(score_scale_ > 1e-12 * std::abs(score_mean_))) score_scale_ = 1.0;
  std::vector<double> y(n);
  for (size_t i = 0; i < n; ++i) y[i] = (scores_[i] - score_mean_) / score_scale_;

  std::vector<double> distances(n * n);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j <= i; ++j) {
      distances[i * n + j] = distances[j * n + i] = squared_distance(&points_[i * d], &points_[j * d], d);
    }
  }

  // Maximises the log marginal likelihood, -y^T K^-1 y / 2 - log|K| / 2 (less a constant), over the grid.
  double best_likelihood = -std::numeric_limits<double>::infinity();
  std::vector<double> kernel(n * n), factor(n * n), alpha(n), chosen_kernel;
  for (double length_scale : kLengthScales) {
    const double inverse_two_l2 = 1.0 / (2.0 * length_scale * length_scale);
    for (size_t i = 0; i < n * n; ++i) kernel[i] = std::exp(-distances[i] * inverse_two_l2);
    bool factored = false;
    for (double jitter : kJitters) {
      factor = kernel;
      const double diagonal = (1.0 + noise_variance_) * (1.0 + jitter);
      for (size_t i = 0; i < n; ++i) factor[i * n + i] = diagonal;
      if (cholesky(factor, n)) {
        factored = true;
        break;
      }
    }
    if (!factored) continue;
    alpha = y;
    solve_lower(factor, n, alpha);
    double likelihood = 0.0;
    for (size_t i = 0; i < n; ++i) likelihood -= 0.5 * alpha[i] * alpha[i] + std::log(factor[i * n + i]);
    if (likelihood > best_likelihood) {
      best_likelihood = likelihood;
      length_scale_ = length_scale;
      solve_upper_transposed(factor, n, alpha);
      cholesky_ = factor;
      alpha_ = alpha;
      chosen_kernel = kernel;
    }
  }

  // With the noise-free kernel: the mean of the latent score, not of another noisy measurement of it.
  posterior_means_.assign(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) posterior_means_[i] += chosen_kernel[i * n + j] * alpha_[j];
  }
  best_index_ = static_cast<size_t>(std::max_element(posterior_means_.begin(), posterior_means_.end()) -
                                    posterior_means_.begin());
}

BayesianOptimizer::Posterior BayesianOptimizer::predict(const double* x, std::vector<double>& kernel_row,
                                                        std::vector<double>& solved) const {
  const size_t n = scores_.size();
  const int d = dimensions_;
  const double inverse_two_l2 = 1.0 / (2.0 * length_scale_ * length_scale_);
  double m = 0.0;
  for (size_t i = 0; i < n; ++i) {
    kernel_row[i] = std::exp(-squared_distance(x, &points_[i * d], d) * inverse_two_l2);
    m += kernel_row[i] * alpha_[i];
  }
  solved = kernel_row;
  solve_lower(cholesky_, n, solved);
  double explained = 0.0;
  for (size_t i = 0; i < n; ++i) explained += solved[i] * solved[i];
  return {m, std::sqrt(std::max(1.0 - explained, 0.0))};
}

bool BayesianOptimizer::is_sample(const double* x) const {
  const size_t d = static_cast<size_t>(dimensions_);
  for (size_t i = 0; i < scores_.size(); ++i) {
    if (std::equal(x, x + d, &points_[i * d])) return true;
  }
  return false;
}

std::vector<double> BayesianOptimizer::halton_point(uint64_t index) const {
  std::vector<double> point(dimensions_);
  for (int k = 0; k < dimensions_; ++k) {
    const uint32_t base = halton_bases_[k];
    double fraction = 1.0, value = 0.0;
    for (uint64_t i = index; i > 0; i /= base) {
      fraction /= base;
      value += fraction * static_cast<double>(i % base);
    }
    point[k] = value;
  }
  return point;
}

std::vector<double> BayesianOptimizer::next_point() {
  const size_t n = scores_.size();
  // Index 0 is the origin, a corner; 1 is the centre, the least committal first guess. A few points spread
  // over the cube before the model chooses keep one lucky early sample from drawing the whole search
  // around it.
  if (n < initial_points_) {
    std::vector<double> h = halton_point(n + 1);
    for (int k = 0; k < dimensions_; ++k) h[k] = low_[k] + (high_[k] - low_[k]) * h[k];
    return h;
  }

  const int d = dimensions_;
  std::mt19937_64 rng(mix(seed_ ^ mix(n)));
  std::vector<double> kernel_row(n), solved(n), candidate(d);
  const double incumbent = posterior_means_[best_index_];

  // The best by expected improvement and, in case every improvement underflows to 0 (a confident model
  // far from its optimum), the most uncertain. Neither may repeat a sample: that would learn the least.
  std::vector<double> best_ei_point, most_uncertain_point;
  double best_ei = 0.0, largest_stddev = -1.0;
  auto consider = [&](const std::vector<double>& x) {
    const Posterior posterior = predict(x.data(), kernel_row, solved);
    const double ei = expected_improvement(posterior.mean, posterior.stddev, incumbent);
    if (ei > best_ei && !is_sample(x.data())) {
      best_ei = ei;
      best_ei_point = x;
    }
    if (posterior.stddev > largest_stddev && !is_sample(x.data())) {
      largest_stddev = posterior.stddev;
      most_uncertain_point = x;
    }
  };
  auto perturb = [&](const double* centre, double radius) {
    for (int k = 0; k < d; ++k) {
      candidate[k] = std::min(high_[k], std::max(low_[k], centre[k] + radius * (2.0 * uniform01(rng) - 1.0)));
    }
    consider(candidate);
  };

  for (int c = 0; c < kGlobalCandidates; ++c) {
    for (int k = 0; k < d; ++k) candidate[k] = low_[k] + (high_[k] - low_[k]) * uniform01(rng);
    consider(candidate);
  }

  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  const size_t centres = std::min(n, static_cast<size_t>(kLocalCentres));
  std::partial_sort(order.begin(), order.begin() + centres, order.end(),
                    [&](size_t a, size_t b) { return posterior_means_[a] > posterior_means_[b]; });
  constexpr int kRadii = static_cast<int>(sizeof(kLocalRadii) / sizeof(kLocalRadii[0]));
  for (size_t c = 0; c < centres; ++c) {
    for (int i = 0; i < kLocalCandidatesPerCentre; ++i) {
      perturb(&points_[order[c] * d], kLocalRadii[i % kRadii] * length_scale_);
    }
  }

  if (!best_ei_point.empty()) {
    double radius = kRefineFirstRadius * length_scale_;
    for (int round = 0; round < kRefineRounds; ++round, radius *= 0.5) {
      const std::vector<double> centre = best_ei_point;
      for (int i = 0; i < kRefineCandidatesPerRound; ++i) perturb(centre.data(), radius);
    }
    return best_ei_point;
  }
  return most_uncertain_point;
}

std::vector<double> BayesianOptimizer::best_point() const {
  if (scores_.empty()) throw std::logic_error("BayesianOptimizer::best_point: no samples");
  const auto first = points_.begin() + static_cast<std::ptrdiff_t>(best_index_ * dimensions_);
  return std::vector<double>(first, first + dimensions_);
}

double BayesianOptimizer::best_mean() const {
  if (scores_.empty()) throw std::logic_error("BayesianOptimizer::best_mean: no samples");
  return score_mean_ + score_scale_ * posterior_means_[best_index_];
}

std::vector<BayesianOptimizer::Ranked> BayesianOptimizer::best_points(size_t k) const {
  std::vector<size_t> order(scores_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return posterior_means_[a] > posterior_means_[b]; });
  std::vector<Ranked> out;
  for (size_t i : order) {
    if (out.size() >= k) break;
    const auto first = points_.begin() + static_cast<std::ptrdiff_t>(i * dimensions_);
    std::vector<double> x(first, first + dimensions_);
    bool repeated = false;
    for (const Ranked& r : out) repeated = repeated || r.point == x;
    if (!repeated) out.push_back(Ranked{std::move(x), score_mean_ + score_scale_ * posterior_means_[i]});
  }
  return out;
}

}  // namespace kolo
