// The gradient set the benchmarks reduce: names and shapes from a file (benchmarks/data), zero-filled
// float32 tensors (a sum of zeros stays finite however many steps run).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "kolo/kolo.h"

#ifndef KOLO_RESNET50_SHAPES
#define KOLO_RESNET50_SHAPES "benchmarks/data/resnet50_grad_shapes.txt"
#endif

namespace bench {

// Ends the job when a kolo call fails: a benchmark has nothing to recover to. (A one-process
// benchmark without MPI just exits.)
inline void check(const kolo::Status& s) {
  if (!s.ok()) {
    std::cerr << s.to_string() << "\n";
    int mpi = 0;
    MPI_Initialized(&mpi);
    if (mpi) MPI_Abort(MPI_COMM_WORLD, 1);
    std::exit(1);
  }
}

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> data;
};

// Elements in the whole set: the size of the one-buffer peer (MPI_Allreduce of all bytes).
inline size_t element_count(const std::vector<Tensor>& tensors) {
  size_t total = 0;
  for (const Tensor& t : tensors) total += t.data.size();
  return total;
}

// Lines "name 64x3x7x7"; '#' starts a comment line.
inline std::vector<Tensor> read_gradient_set(const std::string& path) {
  std::ifstream f(path);
  if (!f) {
    std::cerr << "cannot read " << path << "\n";
    std::exit(2);
  }
  std::vector<Tensor> out;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line);
    Tensor t;
    std::string dims;
    s >> t.name >> dims;
    int64_t n = 1;
    std::istringstream d(dims);
    std::string part;
    while (std::getline(d, part, 'x')) {
      t.shape.push_back(std::stoll(part));
      n *= t.shape.back();
    }
    t.data.assign(static_cast<size_t>(n), 0.0f);
    out.push_back(std::move(t));
  }
  return out;
}

// One step of a training loop's communication: every tensor's allreduce (sum) started as backward
// would produce it, then every one waited for.
inline void allreduce_each(std::vector<Tensor>& tensors) {
  std::vector<kolo::Handle> handles;
  handles.reserve(tensors.size());
  kolo::AllreduceOptions sum;
  sum.op = kolo::ReduceOp::kSum;
  for (Tensor& t : tensors) {
    kolo::TensorView v = kolo::cpu_view(t.data.data(), t.shape);
    handles.push_back(kolo::allreduce_async(t.name, v, v, sum));
  }
  for (kolo::Handle h : handles) check(kolo::wait(h));
}

// The set as the CPU benchmarks use it: its tensors, the same bytes as one flat buffer (the peer, one
// MPI_Allreduce of all bytes), and a step of each.
struct GradientSet {
  explicit GradientSet(const std::string& path)
      : tensors(read_gradient_set(path)),
        total(element_count(tensors)),
        flat(total, 0.0f),
        bytes(static_cast<double>(total) * sizeof(float)) {}

  void kolo_step() { allreduce_each(tensors); }
  void mpi_one_call() {
    MPI_Allreduce(MPI_IN_PLACE, flat.data(), static_cast<int>(total), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  }

  std::vector<Tensor> tensors;
  size_t total;            // elements
  std::vector<float> flat;
  double bytes;            // of the whole set, float32
};

}  // namespace bench
