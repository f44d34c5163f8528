// A file in a shared-memory file system (/dev/shm unless KOLO_SHARED_MEMORY_DIR says otherwise), mapped
// by every rank of one host. Its name carries the creator's pid, so that the segments of a process that
// died before removing its own (SIGKILL between creating and removing) are recognized and removed by
// the next kolo that starts on the host; a segment is removed from the file system as soon as every
// rank has mapped it, so a job killed later leaves nothing behind.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "kolo/status.h"

namespace kolo {

class SharedSegment {
 public:
  // A new segment of `bytes` in `dir`, every page reserved now (a full file system fails here, not
  // with SIGBUS at the first write), zero-filled. Its path is path().
  static Status create(const std::string& dir, size_t bytes, std::unique_ptr<SharedSegment>* out);
  // Maps an existing segment that create() made.
  static Status attach(const std::string& path, size_t bytes, std::unique_ptr<SharedSegment>* out);
  ~SharedSegment();
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;

  char* base() const { return base_; }
  size_t bytes() const { return bytes_; }
  const std::string& path() const { return path_; }
  // Removes the name (the mapping stays until every rank unmaps it). Idempotent.
  void unlink();

 private:
  SharedSegment(std::string path, char* base, size_t bytes) : path_(std::move(path)), base_(base), bytes_(bytes) {}
  std::string path_;
  char* base_;
  size_t bytes_;
  bool linked_ = true;
};

// Removes the kolo segments in `dir` whose creator no longer runs (how many).
int remove_orphaned_segments(const std::string& dir);

}  // namespace kolo
