// main() for the tests run under mpirun: kolo starts before the tests and stops after them. Rank 0
// prints the usual report; other ranks print only failures, tagged with their rank.
#include <gtest/gtest.h>

#include <cstdio>

#include "failure_printer.h"
#include "kolo/kolo.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  kolo::Status s = kolo::init();
  if (!s.ok()) {
    std::fprintf(stderr, "kolo::init failed: %s\n", s.to_string().c_str());
    return 1;
  }
  kolo::testing::print_failures_only_unless_rank_0(kolo::rank());
  const int rc = RUN_ALL_TESTS();
  kolo::shutdown();
  return rc;
}
