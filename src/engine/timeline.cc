#include "engine/timeline.h"

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstring>

#include "common/clock.h"

namespace kolo {

Status Timeline::open(const std::string& path, int rank, std::unique_ptr<Timeline>* out, double origin,
                      int job_rank) {
  out->reset();
  std::string file = path;
  const size_t marker = file.find("%r");
  if (marker == std::string::npos) {
    if (rank != 0) return Status::OK();
  } else {
    file.replace(marker, 2, std::to_string(job_rank >= 0 ? job_rank : rank));
  }
  std::FILE* f = std::fopen(file.c_str(), "w");
  if (f == nullptr) {
    return Status::InvalidArgument("KOLO_TIMELINE: cannot write '" + file + "': " + std::strerror(errno));
  }
  // Unbuffered: the trace's own buffer holds whole events, each write() a run of them (stdio's would cut an
  // event at its buffer's end, and a rank killed then would leave a trace that does not parse).
  std::setvbuf(f, nullptr, _IONBF, 0);
  std::fputs("[\n", f);
  out->reset(new Timeline(f, origin < 0 ? steady_seconds() : origin));
  return Status::OK();
}

Timeline::~Timeline() { close(); }

std::string Timeline::json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

long long Timeline::micros(double t) const { return static_cast<long long>((t - origin_) * 1e6); }

void Timeline::add_event(const char* format, ...) {
  if (!first_event_) pending_ += ",\n";
  first_event_ = false;
  std::va_list args;
  va_start(args, format);
  std::va_list again;
  va_copy(again, args);
  const int length = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  if (length > 0) {
    const size_t at = pending_.size();
    pending_.resize(at + static_cast<size_t>(length) + 1);
    std::vsnprintf(&pending_[at], static_cast<size_t>(length) + 1, format, again);
    pending_.resize(at + static_cast<size_t>(length));  // less the terminating null
  }
  va_end(again);
  if (pending_.size() >= kMostPendingBytes) write_pending();
}

void Timeline::write_pending() {
  if (pending_.empty()) return;
  std::fwrite(pending_.data(), 1, pending_.size(), file_);
  pending_.clear();
}

int Timeline::row_of(const std::string& tensor) {
  auto it = rows_.find(tensor);
  if (it != rows_.end()) return it->second;
  const int row = static_cast<int>(rows_.size()) + 1;
  rows_.emplace(tensor, row);
  // Name the row after the tensor, and keep rows in first-seen order.
  add_event("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":%s}}", row,
               json_string(tensor).c_str());
  add_event("{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"sort_index\":%d}}",
               row, row);
  return row;
}

void Timeline::span(const std::string& tensor, const char* phase, double start, double end,
                    const std::string& args) {
  if (file_ == nullptr) return;
  const int row = row_of(tensor);
  const long long ts = micros(start);
  const long long dur = std::max(0LL, micros(end) - ts);
  add_event("{\"name\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":0,\"ts\":%lld,\"dur\":%lld%s%s}", phase, row,
               ts, dur, args.empty() ? "" : ",\"args\":", args.c_str());
}

void Timeline::instant(const std::string& tensor, const char* what, double at, const std::string& args) {
  if (file_ == nullptr) return;
  const int row = row_of(tensor);
  add_event("{\"name\":\"%s\",\"ph\":\"i\",\"s\":\"p\",\"pid\":%d,\"tid\":0,\"ts\":%lld%s%s}", what, row,
               micros(at), args.empty() ? "" : ",\"args\":", args.c_str());
}

void Timeline::flush_if_due(double now) {
  if (file_ == nullptr || now - last_flush_ < 0.1) return;
  last_flush_ = now;
  write_pending();
}

void Timeline::close() {
  if (file_ == nullptr) return;
  pending_ += "\n]\n";
  write_pending();
  std::fclose(file_);
  file_ = nullptr;
}

}  // namespace kolo
