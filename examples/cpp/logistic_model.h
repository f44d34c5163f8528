// What the two logistic-regression examples share: the synthetic data set and the model's math.
// Everything is deterministic, so every process generates the same data.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace example {

constexpr int kFeatures = 16;

struct Dataset {
  std::vector<double> x;  // rows of kFeatures
  std::vector<double> y;  // 0 or 1
  int64_t rows = 0;
};

// Labels drawn from a logistic model with fixed true weights.
inline Dataset make_dataset(int64_t rows) {
  std::mt19937_64 rng(2024);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<double> truth(kFeatures + 1);
  for (double& w : truth) w = normal(rng);
  Dataset d;
  d.rows = rows;
  d.x.resize(static_cast<size_t>(rows) * kFeatures);
  d.y.resize(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) {
    double z = truth[kFeatures];
    for (int j = 0; j < kFeatures; ++j) {
      const double v = normal(rng);
      d.x[static_cast<size_t>(i * kFeatures + j)] = v;
      z += truth[j] * v;
    }
    d.y[static_cast<size_t>(i)] = uniform(rng) < 1.0 / (1.0 + std::exp(-z)) ? 1.0 : 0.0;
  }
  return d;
}

// Weights (kFeatures, then the bias) drawn from `seed`.
inline std::vector<double> initial_weights(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 0.1);
  std::vector<double> w(kFeatures + 1);
  for (double& v : w) v = normal(rng);
  return w;
}

inline double predict(const Dataset& d, int64_t row, const std::vector<double>& w) {
  double z = w[kFeatures];
  for (int j = 0; j < kFeatures; ++j) z += w[j] * d.x[static_cast<size_t>(row * kFeatures + j)];
  return 1.0 / (1.0 + std::exp(-z));
}

// Mean log-loss gradient over rows [begin, end), written into grad.
inline void gradient(const Dataset& d, int64_t begin, int64_t end, const std::vector<double>& w,
                     std::vector<double>* grad) {
  grad->assign(kFeatures + 1, 0.0);
  for (int64_t i = begin; i < end; ++i) {
    const double err = predict(d, i, w) - d.y[static_cast<size_t>(i)];
    for (int j = 0; j < kFeatures; ++j) (*grad)[j] += err * d.x[static_cast<size_t>(i * kFeatures + j)];
    (*grad)[kFeatures] += err;
  }
  for (double& g : *grad) g /= static_cast<double>(end - begin);
}

// Summed log-loss over rows [begin, end).
inline double loss_sum(const Dataset& d, int64_t begin, int64_t end, const std::vector<double>& w) {
  double sum = 0.0;
  for (int64_t i = begin; i < end; ++i) {
    const double p = predict(d, i, w);
    sum -= d.y[static_cast<size_t>(i)] > 0.5 ? std::log(p) : std::log(1.0 - p);
  }
  return sum;
}

}  // namespace example
