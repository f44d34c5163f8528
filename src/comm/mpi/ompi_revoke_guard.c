/* Preloaded into an in-place (ULFM) job's ranks by kolorun: keeps Open MPI 5.0 from crashing when a
 * process fails while a communicator that holds it is being made.
 *
 * Open MPI 5.0.x marks every communicator holding a failed process with ompi_comm_revoke_local(comm,
 * coll_only), which calls comm->c_coll's revoke hook. A communicator still inside its creation
 * (MPIX_Comm_shrink, MPI_Comm_dup, ... in ompi_comm_activate) is already listed but has no c_coll yet:
 * the call reads address 0x450 and the survivor dies with a segmentation fault. kolo's recovery makes
 * communicators, so a second failure during a recovery met this (tests/system/elastic_in_place/shrink_while_peer_dies.c
 * reproduces it without kolo).
 *
 * libmpi calls ompi_comm_revoke_local through its PLT, so this definition is the one it calls. It finds
 * the real one and checks, from its machine code, that it is the 5.0.x code with that flaw (an indirect
 * call through a pointer loaded from the communicator); it learns both offsets from that code. Where the
 * pointer is still NULL it lends a table whose revoke hook does nothing, and where the table is there but
 * its hook not yet, that hook, for the length of the call, so that the rest of the revoke (the
 * point-to-point part, the flags, the wake-up) still happens. Anything else is passed through unchanged. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uintptr_t (*revoke_local_fn)(void *comm, uintptr_t a1, uintptr_t a2, uintptr_t a3, uintptr_t a4,
                                     uintptr_t a5);

static pthread_once_t once = PTHREAD_ONCE_INIT;
static revoke_local_fn real_revoke_local;
static long coll_offset = -1; /* where the communicator keeps c_coll; -1: pass everything through */
static long hook_offset = -1; /* where c_coll keeps the revoke hook */
static void *lent_table[1024];

static int hook_noop(void *comm) {
  (void)comm;
  return 0;
}

static int32_t disp32(const unsigned char *p) {
  int32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

/* Looks for `mov disp(%rbx),%rax; mov %rbx,%rdi; call *disp(%rax)` in the function's first bytes: the
 * c_coll load and the revoke hook's call of Open MPI 5.0.x's ompi_comm_revoke_local. */
static void learn_offsets(const unsigned char *code) {
#if defined(__x86_64__)
  for (int i = 0; i + 16 <= 128; ++i) {
    const unsigned char *p = code + i;
    if (p[0] == 0x48 && p[1] == 0x8b && p[2] == 0x83 && p[7] == 0x48 && p[8] == 0x89 && p[9] == 0xdf &&
        p[10] == 0xff && p[11] == 0x90) {
      const long coll = disp32(p + 3), hook = disp32(p + 12);
      if (coll > 0 && hook >= 0 && hook % 8 == 0 && hook / 8 < (long)(sizeof lent_table / sizeof lent_table[0])) {
        coll_offset = coll;
        hook_offset = hook;
      }
      return;
    }
  }
#else
  (void)code;
#endif
}

static void find_real(void) {
  real_revoke_local = (revoke_local_fn)dlsym(RTLD_NEXT, "ompi_comm_revoke_local");
  if (real_revoke_local == NULL) {
    /* libmpi loaded later with RTLD_LOCAL (a Python extension's dependency) is not after us in the global
     * scope; ask it by name. */
    void *mpi = dlopen("libmpi.so.40", RTLD_NOW | RTLD_NOLOAD);
    if (mpi != NULL) real_revoke_local = (revoke_local_fn)dlsym(mpi, "ompi_comm_revoke_local");
  }
  if (real_revoke_local != NULL) learn_offsets((const unsigned char *)real_revoke_local);
  lent_table[hook_offset >= 0 ? hook_offset / 8 : 0] = (void *)hook_noop;
  if (getenv("KOLO_DEBUG_OMPI_GUARD") != NULL) {
    fprintf(stderr, "kolo: Open MPI revoke guard: %s (c_coll at %ld, hook at %ld)\n",
            coll_offset >= 0 ? "armed" : "passing through", coll_offset, hook_offset);
  }
}

uintptr_t ompi_comm_revoke_local(void *comm, uintptr_t a1, uintptr_t a2, uintptr_t a3, uintptr_t a4,
                                 uintptr_t a5) {
  pthread_once(&once, find_real);
  if (real_revoke_local == NULL) abort(); /* only libmpi calls this, so libmpi is there */
  if (coll_offset < 0 || comm == NULL) return real_revoke_local(comm, a1, a2, a3, a4, a5);
  /* Two windows of a communicator's creation lack the hook: before c_coll is allocated (NULL), and while
   * its collectives are being chosen (c_coll there, the hook not yet). Fill the gap for the call. */
  void **coll = (void **)((char *)comm + coll_offset);
  void *expected = NULL;
  void **lent = NULL; /* the slot lent to, to give back after */
  void *lent_value = NULL;
  if (__atomic_compare_exchange_n(coll, &expected, (void *)lent_table, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    lent = coll;
    lent_value = (void *)lent_table;
  } else {
    void **hook = (void **)((char *)expected + hook_offset);
    void *no_hook = NULL;
    if (__atomic_compare_exchange_n(hook, &no_hook, (void *)hook_noop, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      lent = hook;
      lent_value = (void *)hook_noop;
    }
  }
  if (lent == NULL) return real_revoke_local(comm, a1, a2, a3, a4, a5); /* complete: Open MPI's own path */
  static int told = 0;
  if (!__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED)) {
    fprintf(stderr, "kolo: a failed process was in a communicator still being made; kolo's guard kept Open MPI "
                    "from crashing in ompi_comm_revoke_local (open-mpi 5.0.x)\n");
  }
  const uintptr_t r = real_revoke_local(comm, a1, a2, a3, a4, a5);
  /* Give the slot back unless the communicator's creation has filled it meanwhile. */
  __atomic_compare_exchange_n(lent, &lent_value, NULL, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  return r;
}
