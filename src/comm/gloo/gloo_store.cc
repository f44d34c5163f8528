#include "comm/gloo/gloo_store.h"

#include <gloo/common/error.h>

#include <algorithm>

namespace kolo {
namespace {

void throw_if(const Status& s) {
  if (!s.ok()) throw gloo::IoException(s.message());
}

constexpr auto kSlice = std::chrono::milliseconds(250);

}  // namespace

Status GlooStore::bounded(KeyValueStore::Clock::time_point deadline,
                          const std::function<Status(KeyValueStore::Clock::time_point)>& wait_until) {
  if (!peers_there_) return wait_until(deadline);
  const auto start = KeyValueStore::Clock::now();
  while (true) {
    const auto until = std::min(deadline, KeyValueStore::Clock::now() + kSlice);
    Status s = wait_until(until);
    if (s.code() == StatusCode::kTimeout && until >= deadline) {
      const double waited = std::chrono::duration<double>(KeyValueStore::Clock::now() - start).count();
      return Status::Timeout("after " + std::to_string(static_cast<int>(waited + 0.5)) + " s in all, " + s.message());
    }
    if (s.code() != StatusCode::kTimeout) return s;
    s = peers_there_();
    if (!s.ok()) return s;
  }
}

void GlooStore::set(const std::string& key, const std::vector<char>& data) {
  throw_if(store_.set(prefix_ + key, std::string(data.begin(), data.end())));
}

std::vector<char> GlooStore::get(const std::string& key) {
  std::string value;
  throw_if(bounded(deadline_, [&](KeyValueStore::Clock::time_point until) {
    return store_.get(prefix_ + key, until, &value);
  }));
  return std::vector<char>(value.begin(), value.end());
}

void GlooStore::wait(const std::vector<std::string>& keys) {
  wait(keys, std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - KeyValueStore::Clock::now()));
}

void GlooStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  // Gloo's own timeout is the context's; the start's deadline bounds it too.
  std::vector<std::string> full;
  for (const std::string& k : keys) full.push_back(prefix_ + k);
  throw_if(bounded(std::min(deadline_, KeyValueStore::Clock::now() + timeout),
                   [&](KeyValueStore::Clock::time_point until) { return store_.wait(full, until); }));
}

}  // namespace kolo
