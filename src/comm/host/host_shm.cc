#include "comm/host/host_shm.h"

#include <algorithm>
#include <cstring>

namespace kolo {

size_t slot_bytes_for(int ranks) {
  constexpr size_t kMost = 1 << 20, kLeast = 64 << 10, kSegment = 16 << 20;
  const size_t fair = kSegment / (2 * static_cast<size_t>(ranks)) / 4096 * 4096;
  return std::max(kLeast, std::min(kMost, fair));
}

std::unique_ptr<HostShm> HostShm::open(Group& local, const HostShmOptions& options,
                                       std::unique_ptr<ShmWaitPolicy> policy, std::string* why_not) {
  const int rank = local.rank(), size = local.size();
  if (!options.enabled) {
    *why_not = "KOLO_SHARED_MEMORY=0";
    return nullptr;
  }
  if (size == 1) {
    *why_not = "one rank on the host";
    return nullptr;
  }
  const ShmLayout layout(size, options.slot_bytes > 0 ? options.slot_bytes : slot_bytes_for(size));
  // Local rank 0 makes the segment and tells the others its path (empty: it could not).
  std::unique_ptr<SharedSegment> segment;
  char path[512] = {0};
  std::string failure;
  if (rank == 0) {
    remove_orphaned_segments(options.dir);
    Status s = SharedSegment::create(options.dir, layout.bytes(), &segment);
    if (s.ok()) {
      std::strncpy(path, segment->path().c_str(), sizeof(path) - 1);
    } else {
      failure = s.message();
    }
  }
  bool ok = local.broadcast(path, sizeof(path), 0, "the host's shared segment's path", WaitPace::kControl).ok() &&
            path[0] != 0;
  if (ok && rank != 0) {
    Status s = SharedSegment::attach(path, layout.bytes(), &segment);
    if (!s.ok()) {
      ok = false;
      failure = s.message();
    }
  }
  auto memory = std::unique_ptr<HostShm>(new HostShm());
  memory->policy_ = std::move(policy);
  if (ok) {
    memory->group_ = std::make_unique<ShmGroup>(std::move(segment), layout, rank, memory->policy_.get());
    memory->group_->publish_pid();
  }
  // Every rank mapped it, and wrote its pid, or none uses it.
  if (!local.all_true(ok, &ok, "whether every rank of the host mapped its shared segment").ok()) ok = false;
  if (!ok) {
    *why_not = failure.empty() ? "a rank of the host could not map the segment" : failure;
    return nullptr;
  }
  // Mapped everywhere: the name can go, so nothing is left behind however the job ends.
  memory->group_->segment().unlink();
  memory->group_->start_watching();
  return memory;
}

}  // namespace kolo
