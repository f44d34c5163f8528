// The autotuner's Bayesian optimiser (engine/tuning/bayesian_optimizer.h): determinism, convergence on
// smooth, noisy and step-shaped scores, robustness of the best point to a lucky sample, and its contract.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "engine/tuning/bayesian_optimizer.h"

namespace kolo {
namespace {

using Score = std::function<double(const std::vector<double>&)>;

// The autotuner's loop: ask for a point, measure it, report it.
void drive(BayesianOptimizer& optimizer, int samples, const Score& score,
           std::vector<std::vector<double>>* asked = nullptr) {
  for (int i = 0; i < samples; ++i) {
    const std::vector<double> x = optimizer.next_point();
    if (asked != nullptr) asked->push_back(x);
    optimizer.add_sample(x, score(x));
  }
}

void expect_in_cube(const std::vector<double>& x, int dimensions) {
  ASSERT_EQ(x.size(), static_cast<size_t>(dimensions));
  for (double v : x) {
    EXPECT_GE(v, 0.0);
    EXPECT_LE(v, 1.0);
  }
}

TEST(BayesianOptimizer, SameSeedAndSamplesGiveTheSamePoints) {
  const Score score = [](const std::vector<double>& x) { return std::sin(6.0 * x[0]) + x[1] * x[2]; };
  BayesianOptimizer a(3, 7), b(3, 7), other_seed(3, 8);
  std::vector<std::vector<double>> asked_a, asked_b, asked_other;
  drive(a, 12, score, &asked_a);
  drive(b, 12, score, &asked_b);
  drive(other_seed, 12, score, &asked_other);
  EXPECT_EQ(asked_a, asked_b);  // exactly, bit for bit
  EXPECT_EQ(a.best_point(), b.best_point());
  EXPECT_EQ(a.best_mean(), b.best_mean());
  // The first two are quasi-random and seed-free; the seed steers the search after them.
  EXPECT_EQ(asked_a[0], asked_other[0]);
  EXPECT_EQ(asked_a[1], asked_other[1]);
  EXPECT_NE(asked_a[2], asked_other[2]);
  // A function of the samples: asking again without a new one gives the same point.
  EXPECT_EQ(a.next_point(), a.next_point());
}

TEST(BayesianOptimizer, FirstPointsComeFromAHaltonSequence) {
  BayesianOptimizer optimizer(2, 1);
  EXPECT_EQ(optimizer.next_point(), (std::vector<double>{0.5, 1.0 / 3.0}));
  optimizer.add_sample({0.5, 1.0 / 3.0}, 1.0);
  EXPECT_EQ(optimizer.next_point(), (std::vector<double>{0.25, 2.0 / 3.0}));
}

TEST(BayesianOptimizer, FindsTheMaximumOfASmoothFunction) {
  BayesianOptimizer optimizer(1, 42);
  drive(optimizer, 15, [](const std::vector<double>& x) { return -(x[0] - 0.3) * (x[0] - 0.3); });
  ASSERT_EQ(optimizer.samples(), 15u);
  EXPECT_NEAR(optimizer.best_point()[0], 0.3, 0.05);
  EXPECT_NEAR(optimizer.best_mean(), 0.0, 0.0025);  // -(0.05)^2 at worst
}

TEST(BayesianOptimizer, FindsTheMaximumOfANoisy2DFunction) {
  // A paraboloid peaking at (0.7, 0.2), its range over the cube 1.13, plus uniform noise of +-2% of that.
  std::mt19937_64 noise(2024);
  const Score score = [&noise](const std::vector<double>& x) {
    const double peak = -((x[0] - 0.7) * (x[0] - 0.7) + (x[1] - 0.2) * (x[1] - 0.2));
    return peak + 0.0226 * (2.0 * static_cast<double>(noise() >> 11) * 0x1.0p-53 - 1.0);
  };
  BayesianOptimizer optimizer(2, 3);
  drive(optimizer, 25, score);
  const std::vector<double> best = optimizer.best_point();
  EXPECT_NEAR(best[0], 0.7, 0.1);
  EXPECT_NEAR(best[1], 0.2, 0.1);
  EXPECT_NEAR(optimizer.best_mean(), 0.0, 0.03);
}

TEST(BayesianOptimizer, FindsTheBetterSideOfAStep) {
  // A categorical setting mapped onto [0,1]: two values, the second better.
  BayesianOptimizer optimizer(1, 5);
  drive(optimizer, 10, [](const std::vector<double>& x) { return x[0] < 0.5 ? 1.0 : 2.0; });
  EXPECT_GE(optimizer.best_point()[0], 0.5);
  EXPECT_NEAR(optimizer.best_mean(), 2.0, 0.05);
}

TEST(BayesianOptimizer, BestPointPrefersAConsistentRegionToOneLuckySample) {
  BayesianOptimizer optimizer(1, 9);
  // Around 0.3, every measurement is about 1.0.
  for (double x : {0.26, 0.28, 0.3, 0.32, 0.34}) optimizer.add_sample({x}, 1.0 + 0.2 * (x - 0.3));
  // At 0.8, three measurements of one setting: two poor, one lucky and the highest score of all.
  optimizer.add_sample({0.8}, 0.5);
  optimizer.add_sample({0.8}, 1.1);
  optimizer.add_sample({0.8}, 0.55);
  EXPECT_NEAR(optimizer.best_point()[0], 0.3, 0.041);
  EXPECT_NEAR(optimizer.best_mean(), 1.0, 0.02);
}

TEST(BayesianOptimizer, OneSampleIsItsOwnBest) {
  BayesianOptimizer optimizer(2, 1);
  optimizer.add_sample({0.25, 0.75}, 123.5);
  EXPECT_EQ(optimizer.best_point(), (std::vector<double>{0.25, 0.75}));
  EXPECT_EQ(optimizer.best_mean(), 123.5);
}

TEST(BayesianOptimizer, BestPointsAreDistinctAndRankedByPosteriorMean) {
  BayesianOptimizer optimizer(1, 5);
  for (double x : {0.1, 0.3, 0.5, 0.7, 0.9}) optimizer.add_sample({x}, -(x - 0.5) * (x - 0.5));
  optimizer.add_sample({0.5}, 0.0);  // the same point twice: listed once
  const std::vector<BayesianOptimizer::Ranked> top = optimizer.best_points(3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].point, (std::vector<double>{0.5}));
  EXPECT_EQ(top[0].mean, optimizer.best_mean());
  EXPECT_GE(top[0].mean, top[1].mean);
  EXPECT_GE(top[1].mean, top[2].mean);
  for (const auto& r : top) EXPECT_TRUE(r.point[0] == 0.3 || r.point[0] == 0.5 || r.point[0] == 0.7) << r.point[0];
  EXPECT_EQ(optimizer.best_points(10).size(), 5u);
}

TEST(BayesianOptimizer, EqualScoresAndDuplicatePointsStayFinite) {
  BayesianOptimizer optimizer(2, 11, 0.0);  // no noise: duplicates make the kernel singular
  for (int i = 0; i < 4; ++i) optimizer.add_sample({0.5, 0.5}, 3.0e9);
  optimizer.add_sample({0.1, 0.9}, 3.0e9);
  EXPECT_EQ(optimizer.best_mean(), 3.0e9);
  const std::vector<double> next = optimizer.next_point();
  expect_in_cube(next, 2);
  EXPECT_NE(next, (std::vector<double>{0.5, 0.5}));
}

TEST(BayesianOptimizer, PointsStayInTheCubeAndNeverRepeatASample) {
  BayesianOptimizer optimizer(3, 13);
  // The optimum lies in a corner: candidates clamped onto the faces must not repeat a sample.
  const Score score = [](const std::vector<double>& x) { return x[0] + x[1] + x[2]; };
  std::vector<std::vector<double>> asked;
  drive(optimizer, 20, score, &asked);
  for (size_t i = 0; i < asked.size(); ++i) {
    expect_in_cube(asked[i], 3);
    for (size_t j = 0; j < i; ++j) EXPECT_NE(asked[i], asked[j]) << "point " << i << " repeats " << j;
  }
  const std::vector<double> best = optimizer.best_point();
  EXPECT_GT(best[0] + best[1] + best[2], 2.7);

  // Out-of-range coordinates are clamped.
  BayesianOptimizer clamped(2, 1);
  clamped.add_sample({-0.5, 1.5}, 1.0);
  EXPECT_EQ(clamped.best_point(), (std::vector<double>{0.0, 1.0}));
}

TEST(BayesianOptimizer, RejectsMisuse) {
  EXPECT_THROW(BayesianOptimizer(0, 1), std::invalid_argument);
  EXPECT_THROW(BayesianOptimizer(2, 1, -0.1), std::invalid_argument);
  EXPECT_THROW(BayesianOptimizer(2, 1, std::nan("")), std::invalid_argument);
  BayesianOptimizer optimizer(2, 1);
  EXPECT_EQ(optimizer.dimensions(), 2);
  EXPECT_THROW(optimizer.best_point(), std::logic_error);
  EXPECT_THROW(optimizer.best_mean(), std::logic_error);
  EXPECT_THROW(optimizer.add_sample({0.5}, 1.0), std::invalid_argument);
  EXPECT_THROW(optimizer.add_sample({0.5, 0.5, 0.5}, 1.0), std::invalid_argument);
  EXPECT_THROW(optimizer.add_sample({0.5, std::nan("")}, 1.0), std::invalid_argument);
  EXPECT_THROW(optimizer.add_sample({0.5, 0.5}, std::numeric_limits<double>::infinity()), std::invalid_argument);
  EXPECT_EQ(optimizer.samples(), 0u);
}

}  // namespace
}  // namespace kolo
