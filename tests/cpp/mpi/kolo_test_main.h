// main() of the test programs run under mpirun: kolo starts before the tests and stops after
// them; rank 0 prints gtest's usual report, other ranks only their failures, tagged with their rank.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>

#include "kolo/kolo.h"

namespace kolo {
namespace testing {

class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_, r.file_name() ? r.file_name() : "?", r.line_number(),
                 r.message());
  }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Failed()) {
      std::fprintf(stderr, "[rank %d] FAILED %s.%s\n", rank_, info.test_suite_name(), info.name());
    }
  }

 private:
  int rank_;
};

// After InitGoogleTest: starts kolo, runs every test, stops kolo; the program's exit status.
inline int run_tests_under_kolo() {
  Status s = init();
  if (!s.ok()) {
    std::fprintf(stderr, "kolo::init failed: %s\n", s.to_string().c_str());
    return 1;
  }
  if (rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(rank()));
  }
  const int rc = RUN_ALL_TESTS();
  shutdown();
  return rc;
}

}  // namespace testing
}  // namespace kolo
