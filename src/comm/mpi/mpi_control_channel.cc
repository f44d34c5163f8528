#include "comm/mpi/mpi_control_channel.h"

#include <climits>
#include <cstring>
#include <utility>

#include "comm/mpi/mpi_status.h"
#include "comm/mpi/recursive_doubling.h"

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

namespace {

// The negotiation's blocks, on kolo's control communicator (nothing else receives there).
constexpr int kNegotiationTag = 1;

}  // namespace

MpiControlChannel::MpiControlChannel(MPI_Comm comm, std::unique_ptr<PeerBell> bell)
    : comm_(comm), bell_(std::move(bell)) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

Status MpiControlChannel::allreduce_and(std::vector<uint64_t>* words, std::string* rider, RiderCombine combine) {
  // The words and the rider travel as one block: the words are ANDed and the riders combined.
  const size_t head = words->size() * 8, bytes = head + rider->size();
  block_.resize(bytes);
  scratch_.resize(bytes);
  std::memcpy(block_.data(), words->data(), head);
  std::memcpy(block_.data() + head, rider->data(), rider->size());
  Status s = recursive_doubling_allreduce(
      comm_, rank_, size_, kNegotiationTag, block_.data(), scratch_.data(), bytes,
      [head, combine](const char* from, char* into, size_t n) {
        and_words(from, into, head);
        combine(from + head, into + head, n - head);
      },
      "negotiation allreduce", bell_.get());
  if (!s.ok()) return s;
  std::memcpy(words->data(), block_.data(), head);
  std::memcpy(&(*rider)[0], block_.data() + head, rider->size());
  return Status::OK();
}

Status MpiControlChannel::allreduce_and(std::vector<uint64_t>* words) {
  const size_t bytes = words->size() * 8;
  scratch_.resize(bytes);
  return recursive_doubling_allreduce(comm_, rank_, size_, kNegotiationTag, reinterpret_cast<char*>(words->data()),
                                      scratch_.data(), bytes, &and_words, "negotiation allreduce", bell_.get());
}

Status MpiControlChannel::gather(const std::string& mine, std::vector<std::string>* all) {
  if (mine.size() > static_cast<size_t>(INT_MAX)) {
    return Status::Internal("negotiation message of " + std::to_string(mine.size()) + " bytes is too large");
  }
  int my_size = static_cast<int>(mine.size());
  std::vector<int> sizes(rank_ == 0 ? static_cast<size_t>(size_) : 0);
  MPI_Request req;
  KOLO_MPI_RETURN_IF_ERROR(MPI_Igather(&my_size, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, comm_, &req),
                           "negotiation MPI_Igather");
  Status s = mpi_wait(&req, "negotiation MPI_Igather");
  if (!s.ok()) return s;

  std::vector<int> displs;
  std::string buffer;
  if (rank_ == 0) {
    displs.resize(static_cast<size_t>(size_));
    long long total = 0;
    for (int r = 0; r < size_; ++r) {
      displs[r] = static_cast<int>(total);
      total += sizes[r];
    }
    if (total > INT_MAX) return Status::Internal("negotiation messages exceed 2 GiB in one cycle");
    buffer.resize(static_cast<size_t>(total));
  }
  KOLO_MPI_RETURN_IF_ERROR(MPI_Igatherv(mine.data(), my_size, MPI_BYTE, &buffer[0], sizes.data(),
                                        displs.data(), MPI_BYTE, 0, comm_, &req),
                           "negotiation MPI_Igatherv");
  s = mpi_wait(&req, "negotiation MPI_Igatherv");
  if (!s.ok()) return s;
  all->clear();
  if (rank_ == 0) {
    for (int r = 0; r < size_; ++r) all->push_back(buffer.substr(displs[r], sizes[r]));
  }
  return Status::OK();
}

Status MpiControlChannel::broadcast(std::string* bytes) {
  uint64_t n = bytes->size();
  MPI_Request req;
  KOLO_MPI_RETURN_IF_ERROR(MPI_Ibcast(&n, 1, MPI_UINT64_T, 0, comm_, &req), "negotiation MPI_Ibcast");
  Status s = mpi_wait(&req, "negotiation MPI_Ibcast");
  if (!s.ok()) return s;
  if (n > static_cast<uint64_t>(INT_MAX)) return Status::Internal("negotiation response exceeds 2 GiB");
  bytes->resize(n);
  if (n == 0) return Status::OK();
  KOLO_MPI_RETURN_IF_ERROR(MPI_Ibcast(&(*bytes)[0], static_cast<int>(n), MPI_BYTE, 0, comm_, &req),
                           "negotiation MPI_Ibcast");
  return mpi_wait(&req, "negotiation MPI_Ibcast");
}

}  // namespace kolo
