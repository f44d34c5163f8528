#include "common/logging.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <mutex>

namespace kolo {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kWarning)};
std::atomic<int> g_rank{-1};

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kTrace: return "TRACE";
    case LogLevel::kDebug: return "DEBUG";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kWarning: return "WARNING";
    case LogLevel::kError: return "ERROR";
  }
  return "?";
}

}  // namespace

void set_log_level(LogLevel level) { g_level = static_cast<int>(level); }
LogLevel log_level() { return static_cast<LogLevel>(g_level.load()); }
void set_log_rank(int rank) { g_rank = rank; }

void log_line(LogLevel level, const std::string& message) {
  static std::mutex mu;  // one line at a time, whole
  std::lock_guard<std::mutex> lock(mu);
  const int rank = g_rank.load();
  if (rank >= 0) {
    std::fprintf(stderr, "[kolo %d] %s: %s\n", rank, level_name(level), message.c_str());
  } else {
    std::fprintf(stderr, "[kolo] %s: %s\n", level_name(level), message.c_str());
  }
  std::fflush(stderr);
}

bool parse_log_level(const std::string& text, LogLevel* level) {
  std::string t = text;
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  for (LogLevel l : {LogLevel::kTrace, LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarning,
                     LogLevel::kError}) {
    std::string name = level_name(l);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    if (t == name) {
      *level = l;
      return true;
    }
  }
  return false;
}

}  // namespace kolo
