// KOLO_TIMELINE: a Chrome trace (JSON array format; loads in chrome://tracing and Perfetto) with
// one row per tensor and a span for each of its phases. Written by the engine thread only.
//
// The file is "[" followed by events separated by ",": the closing "]" is written at shutdown,
// and the trace format allows it to be missing, so a job that dies still leaves a readable trace.
// For the same reason, events are kept whole until written (at least every 100 ms, as cycles go, or per MiB),
// and each write is a run of whole events: a rank killed at any moment leaves a trace that parses.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <unordered_map>

#include "kolo/status.h"

namespace kolo {

class Timeline {
 public:
  // `path` may contain %r, replaced by the rank; without it only rank 0 writes (out is left null
  // on other ranks).
  // `origin` is time zero of the trace (steady seconds; < 0: now).
  // `rank`: the rank in the engine's group (0 writes a path without %r); %r becomes `job_rank`, so a
  // process set's files are named by job rank as everything else is (-1: `rank`).
  static Status open(const std::string& path, int rank, std::unique_ptr<Timeline>* out, double origin = -1.0,
                     int job_rank = -1);
  ~Timeline();

  // A phase of one tensor, [start, end] in steady seconds; `args` is a JSON object or empty.
  void span(const std::string& tensor, const char* phase, double start, double end,
            const std::string& args = "");
  // A moment on one tensor's row (an error, say).
  void instant(const std::string& tensor, const char* what, double at, const std::string& args = "");
  // The start of a negotiation cycle that ran ops, on a row of its own (Horovod's mark_cycles).
  void cycle(double at) { instant("(cycles)", "CYCLE_START", at); }
  void flush_if_due(double now);
  void close();

  static std::string json_string(const std::string& s);

 private:
  Timeline(std::FILE* file, double origin) : file_(file), origin_(origin) {}
  int row_of(const std::string& tensor);
  // Appends one event (printf's format and arguments) to the events not yet written, after its separator.
  void add_event(const char* format, ...) __attribute__((format(printf, 2, 3)));
  // Writes the events not yet written, whole, in one write.
  void write_pending();
  long long micros(double t) const;

  // Events are written when flush_if_due finds it due, or once this many bytes are pending.
  static constexpr size_t kMostPendingBytes = 1 << 20;

  std::FILE* file_;
  std::string pending_;  // whole events, from a separator to the end of an event
  double origin_;
  double last_flush_ = 0.0;
  bool first_event_ = true;
  std::unordered_map<std::string, int> rows_;
};

}  // namespace kolo
