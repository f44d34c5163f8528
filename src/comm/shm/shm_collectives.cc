// The group's collectives: each a sequence of rounds (shm_group.h), every rank running the same ones.
#include <cstring>

#include "comm/shm/shm_group.h"

namespace kolo {
namespace {

// A piece past the end of a short block is empty, and its address may lie past the buffer: not touched.
void copy(char* to, const char* from, int64_t elements, size_t elem) {
  if (elements > 0) std::memcpy(to, from, static_cast<size_t>(elements) * elem);
}

}  // namespace

Status ShmGroup::put_pieces(const char* in, const Pieces& p, int64_t k) {
  Status s = begin_round();
  if (!s.ok()) return s;
  char* mine = slot(rank_);
  for (int b = 0; b < size(); ++b) {
    if (b != rank_) copy(mine + p.offset_in_slot(b), in + p.start(b, k) * p.elem, p.length(b, k), p.elem);
  }
  raise(Flag::kArrived);
  return wait_all(Flag::kArrived);
}

void ShmGroup::reduce_own(const char* in, const Pieces& p, int64_t k, char* to, const ReduceInto& reduce) {
  const int64_t own = p.length(rank_, k);
  if (own == 0) return;
  for (int r = 0; r < size(); ++r) inputs_[static_cast<size_t>(r)] = slot(r) + p.offset_in_slot(rank_);
  inputs_[static_cast<size_t>(rank_)] = in + p.start(rank_, k) * p.elem;
  reduce(inputs_.data(), size(), to, static_cast<size_t>(own) * p.elem);
}

Status ShmGroup::allreduce(const char* in, char* out, int64_t count, size_t elem, const ReduceInto& reduce,
                           ShmPace pace) {
  pace_ = pace;
  const size_t bytes = static_cast<size_t>(count) * elem;
  if (bytes == 0) return broken_;
  if (bytes <= kWholeBytes && bytes <= layout_.slot_bytes()) {
    // One round: every rank reduces all of it, in the same order, so all get the same bits without a
    // second exchange.
    Status s = begin_round();
    if (!s.ok()) return s;
    std::memcpy(slot(rank_), in, bytes);
    raise(Flag::kArrived);
    s = wait_all(Flag::kArrived);
    if (!s.ok()) return s;
    for (int r = 0; r < size(); ++r) inputs_[static_cast<size_t>(r)] = slot(r);
    reduce(inputs_.data(), size(), out, bytes);
    raise(Flag::kDone);
    return Status::OK();
  }
  const Pieces p = pieces(count, elem);
  for (int64_t k = 0; k < p.rounds(); ++k) {
    Status s = put_pieces(in, p, k);
    if (!s.ok()) return s;
    // This rank's piece, reduced into its slot, where the others copy it from.
    reduce_own(in, p, k, slot(rank_) + p.offset_in_slot(rank_), reduce);
    raise(Flag::kReduced);
    s = wait_all(Flag::kReduced);
    if (!s.ok()) return s;
    for (int b = 0; b < size(); ++b) copy(out + p.start(b, k) * elem, slot(b) + p.offset_in_slot(b), p.length(b, k), elem);
    raise(Flag::kDone);
  }
  return Status::OK();
}

Status ShmGroup::reduce_scatter(const char* in, char* own, int64_t count, size_t elem, const ReduceInto& reduce) {
  pace_ = ShmPace::kTransfer;
  const Pieces p = pieces(count, elem);
  for (int64_t k = 0; k < p.rounds(); ++k) {
    Status s = put_pieces(in, p, k);
    if (!s.ok()) return s;
    reduce_own(in, p, k, own + k * p.q * static_cast<int64_t>(elem), reduce);
    raise(Flag::kDone);
  }
  return Status::OK();
}

Status ShmGroup::allgather(const char* own, char* out, int64_t count, size_t elem) {
  pace_ = ShmPace::kTransfer;
  const Pieces p = pieces(count, elem);
  char* own_out = out + block_start(count, size(), rank_) * static_cast<int64_t>(elem);
  for (int64_t k = 0; k < p.rounds(); ++k) {
    Status s = begin_round();
    if (!s.ok()) return s;
    const char* piece = own + k * p.q * static_cast<int64_t>(elem);
    copy(slot(rank_) + p.offset_in_slot(rank_), piece, p.length(rank_, k), elem);
    raise(Flag::kArrived);
    if (own_out != own) copy(own_out + k * p.q * static_cast<int64_t>(elem), piece, p.length(rank_, k), elem);
    s = wait_all(Flag::kArrived);
    if (!s.ok()) return s;
    for (int b = 0; b < size(); ++b) {
      if (b == rank_) continue;
      copy(out + p.start(b, k) * elem, slot(b) + p.offset_in_slot(b), p.length(b, k), elem);
    }
    raise(Flag::kDone);
  }
  return Status::OK();
}

}  // namespace kolo
