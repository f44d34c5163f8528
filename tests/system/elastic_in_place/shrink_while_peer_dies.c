/* Open MPI 5.0.x with ULFM, 4 ranks (mpirun --with-ft ulfm --mca btl tcp,self): rank 3 dies; the survivors
 * revoke and shrink; rank 2 dies argv[1] microseconds into the shrink (a timer), or in one of the dups of
 * the shrunk communicator after it. Ranks 0 and 1 must come out of the shrink and of each dup, with
 * success or MPIX_ERR_PROC_FAILED/REVOKED. Open MPI 5.0.11 alone crashes them in about 1 run in 6
 * (segmentation fault at 0x450 in ompi_comm_revoke_local, on a communicator still being made); with
 * libkolo_ompi_guard.so preloaded it must not (tests/system/elastic_in_place/test_ompi_guard.py). No kolo here. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <unistd.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#if defined(MPIX_ERR_PROC_FAILED)
static void die(int sig) {
  (void)sig;
  raise(SIGKILL);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const long delay_us = argc > 1 ? atol(argv[1]) : 1000;
  int one = 1, sum = 0, rc = MPI_SUCCESS;
  for (int i = 0; rc == MPI_SUCCESS; i++) {
    if (rank == 3 && i == 3) raise(SIGKILL);
    rc = MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  }
  MPIX_Comm_revoke(MPI_COMM_WORLD);
  if (rank == 2) {
    signal(SIGALRM, die);
    struct itimerval t = {{0, 0}, {delay_us / 1000000, delay_us % 1000000}};
    if (delay_us > 0) setitimer(ITIMER_REAL, &t, NULL); else raise(SIGKILL);
  }
  MPI_Comm shrunk;
  rc = MPIX_Comm_shrink(MPI_COMM_WORLD, &shrunk);
  printf("rank %d: shrink rc %d\n", rank, rc);
  fflush(stdout);
  if (rc == MPI_SUCCESS) {
    MPI_Comm_set_errhandler(shrunk, MPI_ERRORS_RETURN);
    for (int i = 0; i < 5 && rc == MPI_SUCCESS; i++) {
      MPI_Comm c;
      rc = MPI_Comm_dup(shrunk, &c);
      printf("rank %d: dup %d rc %d\n", rank, i, rc);
      fflush(stdout);
    }
  }
  printf("rank %d: done\n", rank);
  fflush(stdout);
  /* No MPI_Finalize: with dead processes in the communicators it can wait forever. mpirun ends the job
     once a rank leaves, so give the other survivor time to print first. */
  sleep(1);
  _exit(0);
}
#else
int main(void) {
  printf("no ULFM in this MPI\n");
  return 77;
}
#endif
