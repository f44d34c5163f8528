#include "comm/shm/shared_segment.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace kolo {
namespace {

constexpr const char* kPrefix = "kolo-";

std::string errno_text(int err) { return std::strerror(err); }

// kolo-<pid>-<n>: the creator's pid, and its count of segments made.
std::string next_name() {
  static std::atomic<unsigned> made{0};
  return std::string(kPrefix) + std::to_string(getpid()) + "-" + std::to_string(made.fetch_add(1));
}

Status map_file(int fd, size_t bytes, char** base) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return Status::Internal("mmap of " + std::to_string(bytes) + " bytes: " + errno_text(errno));
  *base = static_cast<char*>(p);
  return Status::OK();
}

}  // namespace

Status SharedSegment::create(const std::string& dir, size_t bytes, std::unique_ptr<SharedSegment>* out) {
  const std::string path = dir + "/" + next_name();
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Internal("cannot create " + path + ": " + errno_text(errno));
  // posix_fallocate returns the error rather than setting errno.
  const int rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  char* base = nullptr;
  Status s = rc == 0 ? map_file(fd, bytes, &base)
                     : Status::Internal("cannot reserve " + std::to_string(bytes) + " bytes in " + dir + ": " +
                                        errno_text(rc));
  close(fd);
  if (!s.ok()) {
    ::unlink(path.c_str());
    return s;
  }
  out->reset(new SharedSegment(path, base, bytes));
  return Status::OK();
}

Status SharedSegment::attach(const std::string& path, size_t bytes, std::unique_ptr<SharedSegment>* out) {
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return Status::Internal("cannot open " + path + ": " + errno_text(errno));
  char* base = nullptr;
  Status s = map_file(fd, bytes, &base);
  close(fd);
  if (!s.ok()) return s;
  out->reset(new SharedSegment(path, base, bytes));
  (*out)->linked_ = false;  // the creator removes it
  return Status::OK();
}

SharedSegment::~SharedSegment() {
  unlink();
  munmap(base_, bytes_);
}

void SharedSegment::unlink() {
  if (!linked_) return;
  linked_ = false;
  ::unlink(path_.c_str());
}

int remove_orphaned_segments(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return 0;
  int removed = 0;
  const size_t prefix = std::strlen(kPrefix);
  while (dirent* e = readdir(d)) {
    const char* name = e->d_name;
    if (std::strncmp(name, kPrefix, prefix) != 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(name + prefix, &end, 10);
    if (pid <= 0 || end == nullptr || *end != '-') continue;
    // Alive, or someone else's (EPERM): left alone.
    if (kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    if (::unlink((dir + "/" + name).c_str()) == 0) ++removed;
  }
  closedir(d);
  return removed;
}

}  // namespace kolo
