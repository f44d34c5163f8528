// main() for the tests run under mpirun (kolo_test_main.h).
#include <gtest/gtest.h>

#include "kolo_test_main.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return kolo::testing::run_tests_under_kolo();
}
