#include <mpi.h>

#include "comm/mpi/segment_reducer.h"

namespace kolo {

CombineBytes combine_with(MPI_Datatype type, MPI_Op op) {
  int elem = 0;
  MPI_Type_size(type, &elem);
  return [elem, type, op](const char* from, char* into, size_t bytes) {
    MPI_Reduce_local(from, into, static_cast<int>(bytes / static_cast<size_t>(elem)), type, op);
  };
}

}  // namespace kolo
