#include "comm/gloo/gloo_store.h"

#include <gloo/common/error.h>

#include <algorithm>

namespace kolo {
namespace {

void throw_if(const Status& s) {
  if (!s.ok()) throw gloo::IoException(s.message());
}

}  // namespace

void GlooStore::set(const std::string& key, const std::vector<char>& data) {
  throw_if(store_.set(prefix_ + key, std::string(data.begin(), data.end())));
}

std::vector<char> GlooStore::get(const std::string& key) {
  std::string value;
  throw_if(store_.get(prefix_ + key, deadline_, &value));
  return std::vector<char>(value.begin(), value.end());
}

void GlooStore::wait(const std::vector<std::string>& keys) {
  std::vector<std::string> full;
  for (const std::string& k : keys) full.push_back(prefix_ + k);
  throw_if(store_.wait(full, deadline_));
}

void GlooStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  // Gloo's own timeout is the context's; the start's deadline bounds it too.
  std::vector<std::string> full;
  for (const std::string& k : keys) full.push_back(prefix_ + k);
  throw_if(store_.wait(full, std::min(deadline_, KeyValueStore::Clock::now() + timeout)));
}

}  // namespace kolo
