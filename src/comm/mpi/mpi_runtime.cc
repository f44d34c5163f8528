#include "comm/mpi/mpi_runtime.h"

#include <mpi.h>

#include <string>

#include "common/logging.h"
#include "comm/mpi/mpi_fault.h"
#include "comm/mpi/mpi_status.h"

namespace kolo {

const char* mpi_thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
  }
  return "an unknown MPI thread level";
}

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string v(text, static_cast<size_t>(len));
  const size_t end = v.find_first_of(",\n");
  return end == std::string::npos ? v : v.substr(0, end);
}


Status mpi_ensure_initialized(MpiRuntime* runtime) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) {
    return Status::Internal("MPI has already been finalized in this process; kolo cannot start");
  }
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = MPI_THREAD_SINGLE;
  if (!initialized) {
    // MULTIPLE lets the application use MPI itself while kolo's thread does; SERIALIZED is the
    // least kolo can work with (its thread is not the one that initialized MPI).
    KOLO_MPI_RETURN_IF_ERROR(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided),
                             "MPI_Init_thread");
    runtime->initialized_by_kolo = true;
  } else {
    MPI_Query_thread(&provided);
  }
  runtime->thread_level = provided;
  if (provided < MPI_THREAD_SERIALIZED) {
    return Status::Unsupported(
        std::string("MPI provides only ") + mpi_thread_level_name(provided) +
        "; kolo runs MPI from a background thread and needs MPI_THREAD_SERIALIZED or better. " +
        (initialized ? "Initialize MPI with MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...) "
                       "(mpi4py does by default), or let kolo initialize it."
                     : "Use an MPI library built with thread support (Open MPI is)."));
  }
  if (provided < MPI_THREAD_MULTIPLE) {
    KOLO_LOG(kWarning, "MPI provides " << mpi_thread_level_name(provided)
                                       << ": the application must not call MPI while kolo is running");
  }
  return Status::OK();
}

void mpi_finalize_if_owned(const MpiRuntime& runtime) {
  if (!runtime.initialized_by_kolo) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  // After a peer's failure survived in place, MPI_Finalize's fence waited forever for the lost rank
  // when the job spanned hosts (Open MPI 5.0.11, ULFM on); mpirun ends the job as well without it.
  if (!finalized && !outlived_a_peer()) MPI_Finalize();
}

}  // namespace kolo
