// MPI's lifetime around kolo's: initialize it when the application has not, with the thread level
// kolo's background thread needs, and finalize it only if kolo initialized it.
#pragma once

#include "kolo/status.h"

namespace kolo {

struct MpiRuntime {
  bool initialized_by_kolo = false;
  int thread_level = 0;  // MPI_THREAD_* as provided
};

// Idempotent. Errors when MPI was finalized, or cannot run MPI from a second thread.
Status mpi_ensure_initialized(MpiRuntime* runtime);
// MPI_Finalize if kolo called MPI_Init_thread and nobody has finalized since.
void mpi_finalize_if_owned(const MpiRuntime& runtime);
const char* mpi_thread_level_name(int level);
std::string mpi_library_version();

}  // namespace kolo
