#include <climits>

#include "comm/mpi/mpi_collectives.h"
#include "comm/mpi/mpi_status.h"

namespace kolo {

VectorLayout::~VectorLayout() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owns_type && !finalized) MPI_Type_free(&type);
}

Status make_vector_layout(const std::vector<int64_t>& rows, int64_t row_bytes, const std::string& name,
                          VectorLayout* layout) {
  int64_t total_rows = 0;
  for (int64_t r : rows) total_rows += r;
  const bool bytes_fit = total_rows * row_bytes <= INT_MAX;
  const int64_t unit = bytes_fit ? 1 : row_bytes;
  if (!bytes_fit && (total_rows > INT_MAX || row_bytes > INT_MAX)) {
    return Status::Unsupported("tensor '" + name + "' is too large for MPI's int counts (" +
                               std::to_string(total_rows) + " rows of " + std::to_string(row_bytes) +
                               " bytes)");
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

}  // namespace kolo
