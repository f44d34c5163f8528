// Leveled logging to stderr, each line tagged with the rank: "[kolo 3] WARNING: ...".
#pragma once

#include <sstream>
#include <string>

namespace kolo {

enum class LogLevel { kTrace = 0, kDebug = 1, kInfo = 2, kWarning = 3, kError = 4 };

void set_log_level(LogLevel level);
LogLevel log_level();
void set_log_rank(int rank);  // -1 until the rank is known
void log_line(LogLevel level, const std::string& message);
bool parse_log_level(const std::string& text, LogLevel* level);

}  // namespace kolo

// Formats only when the level is enabled.
#define KOLO_LOG(level, expr)                                        \
  do {                                                               \
    if (::kolo::LogLevel::level >= ::kolo::log_level()) {            \
      std::ostringstream kolo_log_stream_;                           \
      kolo_log_stream_ << expr;                                      \
      ::kolo::log_line(::kolo::LogLevel::level, kolo_log_stream_.str()); \
    }                                                                \
  } while (0)
