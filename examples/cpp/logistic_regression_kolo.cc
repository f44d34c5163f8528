// Logistic regression by minibatch SGD on every rank, each taking its share of every batch.
// Run with: kolorun -np 4 ./logistic_regression_kolo (or mpirun -np 4 ...).
// The lines marked "kolo" are all that differ from logistic_regression.cc.
#include <cstdio>
#include <cstdlib>

#include "kolo/kolo.h"  // kolo
#include "logistic_model.h"

// kolo: stop the job with kolo's message (it names the tensor and the ranks) if a collective fails.
static void check(const kolo::Status& s) {
  if (!s.ok()) std::fprintf(stderr, "%s\n", s.to_string().c_str()), std::exit(1);
}

int main() {
  using namespace example;
  const int64_t rows = 9600, batch = 96;
  const int epochs = 5;
  const double learning_rate = 0.5;
  const Dataset data = make_dataset(rows);
  if (!kolo::init().ok() || batch % kolo::size() != 0) return 1;          // kolo
  const int64_t first = kolo::rank() * (batch / kolo::size()), shard = batch / kolo::size();  // kolo
  std::vector<double> w = initial_weights(kolo::rank());                   // kolo: differs per rank...
  check(kolo::broadcast("weights", kolo::cpu_view(w), kolo::cpu_view(w), 0));  // kolo: ...until rank 0's win
  std::vector<double> grad;

  for (int epoch = 1; epoch <= epochs; ++epoch) {
    for (int64_t start = 0; start < rows; start += batch) {
      gradient(data, start + first, start + first + shard, w, &grad);
      check(kolo::allreduce("gradient", kolo::cpu_view(grad), kolo::cpu_view(grad)));  // kolo: average
      for (size_t j = 0; j < w.size(); ++j) w[j] -= learning_rate * grad[j];
    }
    double loss = loss_sum(data, 0, rows, w);
    if (kolo::rank() == 0) std::printf("epoch %d loss %.12f\n", epoch, loss / rows);  // kolo
  }
  kolo::shutdown();  // kolo
  return 0;
}
