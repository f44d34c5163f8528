#include "comm/mpi/mpi_group.h"

#include <algorithm>
#include <climits>

#include "comm/mpi/mpi_fault.h"
#include "comm/mpi/mpi_status.h"

namespace kolo {
namespace {

class MpiTransfer : public Group::Transfer {
 public:
  MpiTransfer(const char* what, PeerBell* bell, int peer) : what_(what), bell_(bell), peer_(peer) {}
  ~MpiTransfer() override { cancel(); }
  MPI_Request* request() { return &request_; }
  Status wait(WaitPace pace) override { return mpi_wait(&request_, what_, pace, bell_, peer_); }
  void cancel() override {
    if (request_ == MPI_REQUEST_NULL) return;
    MPI_Cancel(&request_);
    MPI_Wait(&request_, MPI_STATUS_IGNORE);
  }

 private:
  const char* what_;
  PeerBell* bell_;
  int peer_;
  MPI_Request request_ = MPI_REQUEST_NULL;
};

// Byte counts and displacements for the v-collectives, in units MPI's int can hold: bytes when
// everything fits, else rows of `row_bytes` through a contiguous datatype.
struct VectorLayout {
  MPI_Datatype type = MPI_BYTE;
  bool owns_type = false;
  std::vector<int> counts, displs;
  ~VectorLayout() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owns_type && !finalized) MPI_Type_free(&type);
  }
};

// `rows[r]`: rows for rank r. Fails when even rows do not fit an int.
Status make_vector_layout(const std::vector<int64_t>& rows, int64_t row_bytes, const char* what,
                          VectorLayout* layout) {
  int64_t total_rows = 0;
  for (int64_t r : rows) total_rows += r;
  const bool bytes_fit = total_rows * row_bytes <= INT_MAX;
  const int64_t unit = bytes_fit ? 1 : row_bytes;
  if (!bytes_fit && (total_rows > INT_MAX || row_bytes > INT_MAX)) {
    return Status::Unsupported(std::string(what) + ": too large for MPI's int counts (" + std::to_string(total_rows) +
                               " rows of " + std::to_string(row_bytes) + " bytes)");
  }
  layout->counts.resize(rows.size());
  layout->displs.resize(rows.size());
  int64_t offset = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    layout->counts[r] = static_cast<int>(rows[r] * row_bytes / unit);
    layout->displs[r] = static_cast<int>(offset);
    offset += layout->counts[r];
  }
  if (!bytes_fit) {
    KOLO_MPI_RETURN_IF_ERROR(MPI_Type_contiguous(static_cast<int>(row_bytes), MPI_BYTE, &layout->type),
                             "MPI_Type_contiguous");
    layout->owns_type = true;
    KOLO_MPI_RETURN_IF_ERROR(MPI_Type_commit(&layout->type), "MPI_Type_commit");
  }
  return Status::OK();
}

}  // namespace

MpiGroup::MpiGroup(MPI_Comm comm, const MpiReductions* reductions) : comm_(comm), reductions_(reductions) {
  // Errors come back as codes, to fail the op rather than abort the job.
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  track_comm(comm_);
}

MpiGroup::~MpiGroup() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) release_comm(&comm_);
}

Status MpiGroup::post_send(int peer, int tag, const char* data, size_t bytes, const char* what,
                           std::unique_ptr<Transfer>* out) {
  auto t = std::make_unique<MpiTransfer>(what, nullptr, peer);
  KOLO_MPI_RETURN_IF_ERROR(MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, peer, tag, comm_, t->request()), what);
  *out = std::move(t);
  return Status::OK();
}

Status MpiGroup::post_receive(int peer, int tag, char* data, size_t bytes, const char* what,
                              std::unique_ptr<Transfer>* out) {
  auto t = std::make_unique<MpiTransfer>(what, nullptr, peer);
  KOLO_MPI_RETURN_IF_ERROR(MPI_Irecv(data, static_cast<int>(bytes), MPI_BYTE, peer, tag, comm_, t->request()), what);
  *out = std::move(t);
  return Status::OK();
}

Status MpiGroup::send(int peer, int tag, const char* data, size_t bytes, const char* what, WaitPace pace) {
  MPI_Request req = MPI_REQUEST_NULL;
  KOLO_MPI_RETURN_IF_ERROR(MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, peer, tag, comm_, &req), what);
  if (bell_) bell_->ring_if_asleep(peer);
  return mpi_wait(&req, what, pace, bell_.get(), peer);
}

Status MpiGroup::receive(int peer, int tag, char* data, size_t bytes, const char* what, WaitPace pace) {
  MPI_Request req = MPI_REQUEST_NULL;
  KOLO_MPI_RETURN_IF_ERROR(MPI_Irecv(data, static_cast<int>(bytes), MPI_BYTE, peer, tag, comm_, &req), what);
  return mpi_wait(&req, what, pace, bell_.get(), peer);
}

Status MpiGroup::exchange(int left, int right, int tag, const char* out, size_t out_bytes, char* in, size_t in_bytes,
                          const char* what, WaitPace pace) {
  MPI_Request recv = MPI_REQUEST_NULL, sent = MPI_REQUEST_NULL;
  KOLO_MPI_RETURN_IF_ERROR(MPI_Irecv(in, static_cast<int>(in_bytes), MPI_BYTE, left, tag, comm_, &recv), what);
  KOLO_MPI_RETURN_IF_ERROR(MPI_Isend(out, static_cast<int>(out_bytes), MPI_BYTE, right, tag, comm_, &sent), what);
  if (bell_) {
    // The peer's message is already here where it waits for this rank's: ring it if it sleeps (where
    // both arrive together, neither sleeps, and neither looks).
    int here = 0;
    KOLO_MPI_RETURN_IF_ERROR(MPI_Test(&recv, &here, MPI_STATUS_IGNORE), what);
    if (here) bell_->ring_if_asleep(right);
  }
  Status s = mpi_wait(&recv, what, pace, bell_.get(), left);
  if (!s.ok()) return s;
  return mpi_wait(&sent, what, pace, bell_.get(), right);
}

Status MpiGroup::allreduce(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op, const char* what) {
  if (count > INT_MAX) return Status::Unsupported(std::string(what) + ": too large for MPI's int counts");
  KOLO_MPI_RETURN_IF_ERROR(MPI_Allreduce(send == nullptr || send == recv ? MPI_IN_PLACE : send, recv,
                                         static_cast<int>(count), reductions_->datatype(dtype),
                                         reductions_->op(dtype, op), comm_),
                           what);
  return Status::OK();
}

Status MpiGroup::allgatherv(const void* in, void* out, const std::vector<int64_t>& rows, int64_t row_bytes,
                            const char* what) {
  VectorLayout layout;
  Status s = make_vector_layout(rows, row_bytes, what, &layout);
  if (!s.ok()) return s;
  // An input that is already the output's own block (an allgather into the caller's memory) is MPI's in place.
  int64_t own_offset = 0;
  for (int q = 0; q < rank_; ++q) own_offset += rows[static_cast<size_t>(q)] * row_bytes;
  const void* send = static_cast<const char*>(out) + own_offset == in ? MPI_IN_PLACE : in;
  KOLO_MPI_RETURN_IF_ERROR(MPI_Allgatherv(send, layout.counts[static_cast<size_t>(rank_)], layout.type, out,
                                          layout.counts.data(), layout.displs.data(), layout.type, comm_),
                           what);
  return Status::OK();
}

Status MpiGroup::broadcast(void* data, int64_t bytes, int root, const char* what, WaitPace pace) {
  char* p = static_cast<char*>(data);
  for (int64_t off = 0; off < bytes; off += INT_MAX) {
    const int n = static_cast<int>(std::min<int64_t>(INT_MAX, bytes - off));
    if (pace == WaitPace::kTransfer) {
      KOLO_MPI_RETURN_IF_ERROR(MPI_Bcast(p + off, n, MPI_BYTE, root, comm_), what);
      continue;
    }
    // Negotiation's: a nonblocking call waited on politely, which gives up on a lost peer.
    MPI_Request req = MPI_REQUEST_NULL;
    KOLO_MPI_RETURN_IF_ERROR(MPI_Ibcast(p + off, n, MPI_BYTE, root, comm_, &req), what);
    Status s = mpi_wait(&req, what);
    if (!s.ok()) return s;
  }
  return Status::OK();
}

Status MpiGroup::alltoallv(const void* in, const std::vector<int64_t>& send_rows, void* out,
                           const std::vector<int64_t>& recv_rows, int64_t row_bytes, const char* what) {
  VectorLayout send, recv;
  Status s = make_vector_layout(send_rows, row_bytes, what, &send);
  if (s.ok()) s = make_vector_layout(recv_rows, row_bytes, what, &recv);
  if (!s.ok()) return s;
  KOLO_MPI_RETURN_IF_ERROR(MPI_Alltoallv(in, send.counts.data(), send.displs.data(), send.type, out, recv.counts.data(),
                                         recv.displs.data(), recv.type, comm_),
                           what);
  return Status::OK();
}

Status MpiGroup::reduce_scatter(const void* in, void* out, const std::vector<int64_t>& counts, DataType dtype,
                                ReduceOp op, const char* what) {
  std::vector<int> ints(counts.size());
  for (size_t r = 0; r < counts.size(); ++r) {
    if (counts[r] > INT_MAX) return Status::Unsupported(std::string(what) + ": too large for MPI's int counts");
    ints[r] = static_cast<int>(counts[r]);
  }
  KOLO_MPI_RETURN_IF_ERROR(MPI_Reduce_scatter(in, out, ints.data(), reductions_->datatype(dtype),
                                              reductions_->op(dtype, op), comm_),
                           what);
  return Status::OK();
}

Status MpiGroup::gather(const std::string& mine, std::vector<std::string>* all, const char* what) {
  if (mine.size() > static_cast<size_t>(INT_MAX)) {
    return Status::Internal(std::string(what) + ": a message of " + std::to_string(mine.size()) + " bytes is too large");
  }
  int my_size = static_cast<int>(mine.size());
  std::vector<int> sizes(rank_ == 0 ? static_cast<size_t>(size_) : 0);
  MPI_Request req;
  KOLO_MPI_RETURN_IF_ERROR(MPI_Igather(&my_size, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, comm_, &req), what);
  Status s = mpi_wait(&req, what);
  if (!s.ok()) return s;
  std::vector<int> displs;
  std::string buffer;
  if (rank_ == 0) {
    displs.resize(static_cast<size_t>(size_));
    long long total = 0;
    for (int r = 0; r < size_; ++r) {
      displs[static_cast<size_t>(r)] = static_cast<int>(total);
      total += sizes[static_cast<size_t>(r)];
    }
    if (total > INT_MAX) return Status::Internal(std::string(what) + ": messages exceed 2 GiB in one cycle");
    buffer.resize(static_cast<size_t>(total));
  }
  KOLO_MPI_RETURN_IF_ERROR(MPI_Igatherv(mine.data(), my_size, MPI_BYTE, &buffer[0], sizes.data(), displs.data(),
                                        MPI_BYTE, 0, comm_, &req),
                           what);
  s = mpi_wait(&req, what);
  if (!s.ok()) return s;
  all->clear();
  if (rank_ == 0) {
    for (int r = 0; r < size_; ++r) {
      all->push_back(buffer.substr(static_cast<size_t>(displs[static_cast<size_t>(r)]),
                                   static_cast<size_t>(sizes[static_cast<size_t>(r)])));
    }
  }
  return Status::OK();
}

}  // namespace kolo
