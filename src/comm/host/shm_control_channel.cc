#include "comm/host/shm_control_channel.h"

#include <cstring>

namespace kolo {
namespace {

// Every rank's block combined in rank order: the words ANDed, the riders combined.
class AndWithRider : public ReduceInto {
 public:
  AndWithRider(size_t head, ControlChannel::RiderCombine combine) : head_(head), combine_(combine) {}
  void operator()(const char* const* in, int n, char* out, size_t bytes) const override {
    std::memcpy(out, in[0], bytes);
    for (int j = 1; j < n; ++j) {
      and_words(in[j], out, head_);
      if (combine_ != nullptr) combine_(in[j] + head_, out + head_, bytes - head_);
    }
  }

 private:
  size_t head_;
  ControlChannel::RiderCombine combine_;
};

}  // namespace

Status ShmControlChannel::allreduce_and(std::vector<uint64_t>* words) {
  std::string none;
  return allreduce_and(words, &none, nullptr);
}

Status ShmControlChannel::allreduce_and(std::vector<uint64_t>* words, std::string* rider, RiderCombine combine) {
  const size_t head = words->size() * 8, bytes = head + rider->size();
  // The same size on every rank, so every rank goes the same way.
  if (bytes > ShmGroup::kWholeBytes) {
    return combine != nullptr ? over_group_->allreduce_and(words, rider, combine) : over_group_->allreduce_and(words);
  }
  block_.resize(bytes);
  result_.resize(bytes);
  std::memcpy(block_.data(), words->data(), head);
  if (!rider->empty()) std::memcpy(block_.data() + head, rider->data(), rider->size());
  Status s = group_->allreduce(block_.data(), result_.data(), static_cast<int64_t>(bytes), 1,
                               AndWithRider(head, combine), ShmPace::kControl);
  if (!s.ok()) return s;
  std::memcpy(words->data(), result_.data(), head);
  if (!rider->empty()) std::memcpy(&(*rider)[0], result_.data() + head, rider->size());
  return Status::OK();
}

}  // namespace kolo
