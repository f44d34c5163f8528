#include "comm/mpi/mpi_control_channel.h"

#include <atomic>
#include <climits>
#include <cstring>

#include "comm/mpi/mpi_status.h"

namespace kolo {

namespace {

// The words and the rider travel as one element, [word count][words][rider], so that MPI never cuts
// them apart; this op ANDs the words and hands the riders to the combine (one for the process).
std::atomic<ControlChannel::RiderCombine> g_combine{nullptr};

void and_and_ride(void* in, void* inout, int* len, MPI_Datatype* type) {
  int bytes = 0;
  MPI_Type_size(*type, &bytes);
  for (int e = 0; e < *len; ++e) {
    const char* from = static_cast<const char*>(in) + static_cast<size_t>(e) * static_cast<size_t>(bytes);
    char* into = static_cast<char*>(inout) + static_cast<size_t>(e) * static_cast<size_t>(bytes);
    uint64_t n = 0;
    std::memcpy(&n, from, sizeof n);
    for (uint64_t i = 1; i <= n; ++i) {
      uint64_t a, b;
      std::memcpy(&a, from + i * 8, 8);
      std::memcpy(&b, into + i * 8, 8);
      b &= a;
      std::memcpy(into + i * 8, &b, 8);
    }
    const size_t words = (n + 1) * 8;
    g_combine.load()(from + words, into + words, static_cast<size_t>(bytes) - words);
  }
}

MPI_Op ride_op() {
  static MPI_Op op = [] {
    MPI_Op o = MPI_OP_NULL;
    MPI_Op_create(&and_and_ride, 1, &o);  // never freed: one per process
    return o;
  }();
  return op;
}

}  // namespace

MpiControlChannel::MpiControlChannel(MPI_Comm comm) : comm_(comm) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

MpiControlChannel::~MpiControlChannel() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (auto& kv : blocks_) MPI_Type_free(&kv.second);
}

Status MpiControlChannel::allreduce_and(std::vector<uint64_t>* words, std::string* rider, RiderCombine combine) {
  g_combine = combine;
  const size_t head = (words->size() + 1) * 8, bytes = head + rider->size();
  std::vector<char> block(bytes);
  const uint64_t n = words->size();
  std::memcpy(block.data(), &n, 8);
  std::memcpy(block.data() + 8, words->data(), n * 8);
  std::memcpy(block.data() + head, rider->data(), rider->size());
  auto it = blocks_.find(bytes);
  if (it == blocks_.end()) {
    MPI_Datatype type = MPI_DATATYPE_NULL;
    KOLO_MPI_RETURN_IF_ERROR(MPI_Type_contiguous(static_cast<int>(bytes), MPI_BYTE, &type), "MPI_Type_contiguous");
    KOLO_MPI_RETURN_IF_ERROR(MPI_Type_commit(&type), "MPI_Type_commit");
    it = blocks_.emplace(bytes, type).first;
  }
  const MPI_Datatype type = it->second;
  MPI_Request req;
  KOLO_MPI_RETURN_IF_ERROR(MPI_Iallreduce(MPI_IN_PLACE, block.data(), 1, type, ride_op(), comm_, &req),
                           "negotiation MPI_Iallreduce");
  Status s = mpi_wait(&req, "negotiation MPI_Iallreduce");
  if (!s.ok()) return s;
  std::memcpy(words->data(), block.data() + 8, n * 8);
  std::memcpy(&(*rider)[0], block.data() + head, rider->size());
  return Status::OK();
}

Status MpiControlChannel::allreduce_and(std::vector<uint64_t>* words) {
  MPI_Request req;
  KOLO_MPI_RETURN_IF_ERROR(MPI_Iallreduce(MPI_IN_PLACE, words->data(), static_cast<int>(words->size()),
                                          MPI_UINT64_T, MPI_BAND, comm_, &req),
                           "negotiation MPI_Iallreduce");
  return mpi_wait(&req, "negotiation MPI_Iallreduce");
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
