// gpu_allreduce's output: the nccl-tests-style table of kolo beside its peer, the gradient set's two
// rows, the summary against the goal, and all of it as JSON.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace bench {

// One side of a row: its times (one per round, or per step) and the wrong elements it produced.
struct Side {
  std::vector<double> times;
  int64_t wrong = 0;
};

struct SizeRow {
  int64_t bytes = 0;
  int iters = 0;
  Side kolo, peer;
};

struct AllreduceReport {
  std::string device, peer;  // what ran: the backend's description, and the peer's
  std::string kolo_call = "allreduce";  // how kolo's op of a size row is called and waited for
  int ranks = 0;
  int ordinal = 0;  // rank 0's device
  int rounds = 0;
  int steps = 0;
  std::vector<SizeRow> rows;
  size_t tensors = 0;  // the gradient set
  int64_t elements = 0;
  Side grad_kolo, grad_peer;
};

// Every side's wrong elements.
int64_t wrong_total(const AllreduceReport& r);
// Prints the report and, unless `json` is empty, writes it there.
void print_report(const AllreduceReport& r, const std::string& json);

}  // namespace bench
