#include "comm/host/group_control_channel.h"

#include <climits>
#include <cstring>
#include <utility>

#include "comm/host/recursive_doubling.h"
#include "comm/host/tags.h"

namespace kolo {

void and_words(const char* from, char* into, size_t bytes) {
  for (size_t i = 0; i + 8 <= bytes; i += 8) {
    uint64_t a, b;
    std::memcpy(&a, from + i, 8);
    std::memcpy(&b, into + i, 8);
    b &= a;
    std::memcpy(into + i, &b, 8);
  }
}

Status GroupControlChannel::allreduce_and(std::vector<uint64_t>* words, std::string* rider, RiderCombine combine) {
  // The words and the rider travel as one block: the words are ANDed and the riders combined.
  const size_t head = words->size() * 8, bytes = head + rider->size();
  block_.resize(bytes);
  scratch_.resize(bytes);
  std::memcpy(block_.data(), words->data(), head);
  std::memcpy(block_.data() + head, rider->data(), rider->size());
  Status s = recursive_doubling_allreduce(
      group_, tags::kNegotiation, block_.data(), scratch_.data(), bytes,
      [head, combine](const char* from, char* into, size_t n) {
        and_words(from, into, head);
        combine(from + head, into + head, n - head);
      },
      "negotiation allreduce");
  if (!s.ok()) return s;
  std::memcpy(words->data(), block_.data(), head);
  std::memcpy(&(*rider)[0], block_.data() + head, rider->size());
  return Status::OK();
}

Status GroupControlChannel::allreduce_and(std::vector<uint64_t>* words) {
  const size_t bytes = words->size() * 8;
  scratch_.resize(bytes);
  return recursive_doubling_allreduce(group_, tags::kNegotiation, reinterpret_cast<char*>(words->data()),
                                      scratch_.data(), bytes, &and_words, "negotiation allreduce");
}

Status GroupControlChannel::gather(const std::string& mine, std::vector<std::string>* all) {
  return group_.gather(mine, all, "negotiation gather");
}

Status GroupControlChannel::broadcast(std::string* bytes) {
  uint64_t n = bytes->size();
  Status s = group_.broadcast(&n, sizeof n, 0, "negotiation broadcast", WaitPace::kControl);
  if (!s.ok()) return s;
  if (n > static_cast<uint64_t>(INT_MAX)) return Status::Internal("negotiation response exceeds 2 GiB");
  bytes->resize(n);
  if (n == 0) return Status::OK();
  return group_.broadcast(&(*bytes)[0], static_cast<int64_t>(n), 0, "negotiation broadcast", WaitPace::kControl);
}

}  // namespace kolo
