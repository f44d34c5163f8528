#include "alloc_counter.h"

#include <execinfo.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void __libc_free(void*);
}

namespace kolo {
namespace testing {
namespace {

std::atomic<uint64_t> g_news{0};
std::atomic<uint64_t> g_mallocs{0};
std::atomic<bool> g_trace{false};
thread_local bool t_inside = false;  // in operator new (its malloc is not counted twice) or a trace

void trace() {
  if (!g_trace.load(std::memory_order_relaxed) || t_inside) return;
  t_inside = true;  // backtrace() may allocate on its first call
  void* frames[32];
  const int n = backtrace(frames, 32);
  static const char kLine[] = "---- allocation:\n";
  (void)!write(2, kLine, sizeof kLine - 1);
  backtrace_symbols_fd(frames, n, 2);
  t_inside = false;
}

}  // namespace

void count_new() {
  g_news.fetch_add(1, std::memory_order_relaxed);
  trace();
}

namespace {

void* counted_new(size_t bytes) {
  count_new();
  const bool outer = t_inside;
  t_inside = true;
  void* p = __libc_malloc(bytes == 0 ? 1 : bytes);
  t_inside = outer;
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

void count_malloc() {
  if (t_inside) return;
  g_mallocs.fetch_add(1, std::memory_order_relaxed);
  trace();
}

AllocCounts alloc_counts() { return AllocCounts{g_news.load(), g_mallocs.load()}; }

void trace_allocations(bool on) {
  const char* env = std::getenv("KOLO_TEST_ALLOC_TRACE");
  g_trace = on && env != nullptr && env[0] == '1';
}

}  // namespace testing
}  // namespace kolo

extern "C" {
void* malloc(size_t bytes) {
  kolo::testing::count_malloc();
  return __libc_malloc(bytes);
}
void* calloc(size_t n, size_t bytes) {
  kolo::testing::count_malloc();
  return __libc_calloc(n, bytes);
}
void* realloc(void* p, size_t bytes) {
  kolo::testing::count_malloc();
  return __libc_realloc(p, bytes);
}
void free(void* p) { __libc_free(p); }
}

void* operator new(size_t bytes) { return kolo::testing::counted_new(bytes); }
void* operator new[](size_t bytes) { return kolo::testing::counted_new(bytes); }
void* operator new(size_t bytes, const std::nothrow_t&) noexcept {
  try {
    return kolo::testing::counted_new(bytes);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](size_t bytes, const std::nothrow_t& t) noexcept { return operator new(bytes, t); }
void* operator new(size_t bytes, std::align_val_t a) {
  kolo::testing::count_new();
  void* p = nullptr;
  const bool outer = kolo::testing::t_inside;
  kolo::testing::t_inside = true;  // posix_memalign is not wrapped; its inner calls are not counted
  const int rc = posix_memalign(&p, static_cast<size_t>(a), bytes == 0 ? 1 : bytes);
  kolo::testing::t_inside = outer;
  if (rc != 0) throw std::bad_alloc();
  return p;
}
void* operator new[](size_t bytes, std::align_val_t a) { return operator new(bytes, a); }
void operator delete(void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { __libc_free(p); }
void operator delete(void* p) noexcept { __libc_free(p); }
void operator delete[](void* p) noexcept { __libc_free(p); }
void operator delete(void* p, size_t) noexcept { __libc_free(p); }
void operator delete[](void* p, size_t) noexcept { __libc_free(p); }
