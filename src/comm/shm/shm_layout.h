// Where things lie in a host's shared segment: a header, one block of flags per rank (each on its
// own pair of cache lines: a rank writes only its own, the others poll it), then every rank's two
// slots (double-buffered: rank r writes slot r while the others still read the previous round's).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <sys/types.h>

namespace kolo {

struct ShmFlags {
  std::atomic<uint64_t> arrived;  // the last round whose input this rank has put in its slot
  std::atomic<uint64_t> reduced;  // the last round whose piece this rank has reduced into its slot
  std::atomic<uint64_t> done;     // the last round this rank has finished reading the slots of
  // How many of the others sleep on each flag above (in its futex, its low 32 bits): the rank that raises
  // it wakes them, so that a peer long waited for is seen at once, not at the end of a nap.
  std::atomic<uint32_t> sleepers[3];
  pid_t pid;                      // written once, before the group is agreed
  char pad[128 - 3 * sizeof(std::atomic<uint64_t>) - 3 * sizeof(std::atomic<uint32_t>) - sizeof(pid_t)];
};
static_assert(sizeof(ShmFlags) == 128, "one rank's flags: two cache lines");
static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<uint32_t>::is_always_lock_free,
              "flags shared between processes must be lock-free");
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "a flag's futex is its first 4 bytes, its low half");

class ShmLayout {
 public:
  ShmLayout(int ranks, size_t slot_bytes) : ranks_(ranks), slot_bytes_(slot_bytes) {}
  size_t bytes() const { return slots_offset() + 2 * static_cast<size_t>(ranks_) * slot_bytes_; }
  int ranks() const { return ranks_; }
  size_t slot_bytes() const { return slot_bytes_; }
  ShmFlags* flags(char* base, int rank) const {
    return reinterpret_cast<ShmFlags*>(base + kHeaderBytes + static_cast<size_t>(rank) * sizeof(ShmFlags));
  }
  char* slot(char* base, int rank, uint64_t round) const {
    return base + slots_offset() + (static_cast<size_t>(rank) * 2 + round % 2) * slot_bytes_;
  }

 private:
  static constexpr size_t kHeaderBytes = 128;
  static constexpr size_t kPage = 4096;
  size_t slots_offset() const {
    const size_t end = kHeaderBytes + static_cast<size_t>(ranks_) * sizeof(ShmFlags);
    return (end + kPage - 1) / kPage * kPage;
  }
  int ranks_;
  size_t slot_bytes_;
};

}  // namespace kolo
