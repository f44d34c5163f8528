// Logistic regression by minibatch SGD, in one process. Its distributed twin is
// logistic_regression_kolo.cc: diff the two to see the lines kolo adds.
#include <cstdio>

#include "logistic_model.h"

int main() {
  using namespace example;
  const int64_t rows = 9600, batch = 96;
  const int epochs = 5;
  const double learning_rate = 0.5;
  const Dataset data = make_dataset(rows);
  const int64_t first = 0, shard = batch;
  std::vector<double> w = initial_weights(0);
  std::vector<double> grad;

  for (int epoch = 1; epoch <= epochs; ++epoch) {
    for (int64_t start = 0; start < rows; start += batch) {
      gradient(data, start + first, start + first + shard, w, &grad);
      for (size_t j = 0; j < w.size(); ++j) w[j] -= learning_rate * grad[j];
    }
    double loss = loss_sum(data, 0, rows, w);
    std::printf("epoch %d loss %.12f\n", epoch, loss / rows);
  }
  return 0;
}
