// Counts the process's heap allocations (every operator new, and malloc/calloc/realloc), for the
// test that kolo's small op allocates nothing in steady state. Linked only into that test's program:
// it replaces the global operator new and wraps glibc's malloc for the whole process.
#pragma once

#include <cstdint>

namespace kolo {
namespace testing {

struct AllocCounts {
  uint64_t news = 0;     // operator new, all forms
  uint64_t mallocs = 0;  // malloc, calloc, realloc (operator new's own malloc not counted again)
};

// The counts since the program started, all threads together.
AllocCounts alloc_counts();
// While on (KOLO_TEST_ALLOC_TRACE=1 also needed), each allocation prints its call stack to stderr:
// how to find one that the test reports.
void trace_allocations(bool on);

}  // namespace testing
}  // namespace kolo
