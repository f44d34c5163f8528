/* kolo's C ABI: the same functions as kolo.h, for bindings (kolo's Python package uses only this)
 * and other languages. Stable: functions and enum values are only ever added.
 *
 * Functions returning int32_t return a kolo_status_code; after a non-zero return,
 * kolo_last_error() gives the message on the calling thread. An op's entry point returns its status
 * and writes its handle (see Operations below). */
#ifndef KOLO_C_API_H_
#define KOLO_C_API_H_

#include <stddef.h>
#include <stdint.h>

#include "kolo/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 2: one entry point per op, taking a kolo_op_options (1: an entry point per op and variant). */
#define KOLO_C_API_VERSION 2

typedef enum {
  KOLO_OK = 0,
  KOLO_INVALID_ARGUMENT = 1,
  KOLO_NOT_INITIALIZED = 2,
  KOLO_MISMATCH = 3,
  KOLO_ABORTED = 4,
  KOLO_INTERNAL = 5,
  KOLO_UNSUPPORTED = 6,
  KOLO_TIMEOUT = 7,
  KOLO_PEERS_FAILED = 8,
  KOLO_UNKNOWN_HANDLE = 9 /* kolo_wait on a handle never issued or already waited on */
} kolo_status_code;

typedef enum {
  KOLO_UINT8 = 0,
  KOLO_INT8 = 1,
  KOLO_INT32 = 2,
  KOLO_INT64 = 3,
  KOLO_FLOAT16 = 4,
  KOLO_BFLOAT16 = 5,
  KOLO_FLOAT32 = 6,
  KOLO_FLOAT64 = 7,
  KOLO_INT16 = 8,
  KOLO_BOOL = 9,
  KOLO_UINT16 = 10
} kolo_dtype;

typedef enum { KOLO_SUM = 0, KOLO_AVERAGE = 1, KOLO_MIN = 2, KOLO_MAX = 3, KOLO_PRODUCT = 4, KOLO_ADASUM = 5 } kolo_reduce_op;

typedef enum { KOLO_CPU = 0, KOLO_CUDA = 1 } kolo_device_type;

/* What an allreduce's float32 data travels as between ranks (see kolo::Compression). */
typedef enum { KOLO_COMPRESSION_NONE = 0, KOLO_COMPRESSION_FP16 = 1, KOLO_COMPRESSION_BF16 = 2 } kolo_compression;

typedef int64_t kolo_handle;

/* A view of caller-owned memory. strides NULL: contiguous. */
typedef struct {
  void* data;
  int32_t dtype;        /* kolo_dtype */
  int32_t ndim;
  const int64_t* shape; /* ndim entries, in elements */
  const int64_t* strides;
  int32_t device_type;  /* kolo_device_type */
  int32_t device_index;
  void* stream;         /* cudaStream_t for CUDA tensors, else NULL */
} kolo_tensor;

/* Called on kolo's thread when an enqueued op ends, before kolo_wait returns for it (not for a call
 * refused at once). user_data tells the caller which op it was. */
typedef void (*kolo_done_fn)(void* user_data, int32_t status_code, const char* message);
/* For allgather and alltoall: memory for an output of this shape (the input's dtype and device).
 * Return NULL to fail the op (NULL is fine for an empty output). Pass no allocator to let kolo
 * allocate; the memory then comes back through kolo_output. */
typedef void* (*kolo_allocate_fn)(void* user_data, int32_t ndim, const int64_t* shape);

/* An op's result beyond its status; owns memory kolo allocated. */
typedef struct kolo_output kolo_output;

KOLO_EXPORT const char* kolo_last_error(void);
/* The KOLO_C_API_VERSION libkolo was built with: a program may check it against its header's. */
KOLO_EXPORT int32_t kolo_abi_version(void);

KOLO_EXPORT int32_t kolo_init(void);
/* KOLO_* settings taking precedence over the environment: count pairs of keys and values. */
KOLO_EXPORT int32_t kolo_init_with_settings(const char* const* keys, const char* const* values, int32_t count);
KOLO_EXPORT int32_t kolo_shutdown(void);
/* See kolo::recover_in_place and kolo::in_place_recovery (1 when a lost peer is survived in place). */
KOLO_EXPORT int32_t kolo_recover_in_place(void);
KOLO_EXPORT int32_t kolo_in_place_recovery(void);
KOLO_EXPORT int32_t kolo_is_initialized(void);
KOLO_EXPORT int32_t kolo_rank(void);
KOLO_EXPORT int32_t kolo_size(void);
KOLO_EXPORT int32_t kolo_local_rank(void);
KOLO_EXPORT int32_t kolo_local_size(void);
KOLO_EXPORT int32_t kolo_cross_rank(void);
KOLO_EXPORT int32_t kolo_cross_size(void);
KOLO_EXPORT int32_t kolo_mpi_threads_supported(void);
/* The world the ranks formed: KOLO_CONTROLLER_MPI or KOLO_CONTROLLER_GLOO while initialized, else 0. */
#define KOLO_CONTROLLER_MPI 1
#define KOLO_CONTROLLER_GLOO 2
KOLO_EXPORT int32_t kolo_controller(void);
/* 1 when built with the Gloo world. */
KOLO_EXPORT int32_t kolo_gloo_built(void);
KOLO_EXPORT int32_t kolo_is_homogeneous(void);
/* 1 when built with CUDA; NCCL's version code (major * 10000 + minor * 100 + patch) when built with
 * NCCL, else 0. */
KOLO_EXPORT int32_t kolo_cuda_built(void);
KOLO_EXPORT int32_t kolo_nccl_built(void);
/* See kolo::start_timeline and kolo::stop_timeline. */
KOLO_EXPORT int32_t kolo_start_timeline(const char* path, int32_t mark_cycles);
KOLO_EXPORT int32_t kolo_stop_timeline(void);

/* ---- Operations ----------------------------------------------------------------------------------
 * One entry point per op, each taking a kolo_op_options (NULL: the defaults). Each returns a status:
 * KOLO_OK once the op is enqueued (*handle receives its handle: wait for it with kolo_wait), or, with
 * blocking set, once the op is done (its status is returned; no handle). A call refused at once (a bad
 * argument, kolo not initialized, an unknown process set, a name already in flight) returns its status
 * with nothing enqueued and no handle (*handle is 0); kolo_last_error() says why, naming the tensor
 * and the rank. handle may be NULL only when blocking. kolo copies what the options point to (name,
 * splits) before it returns. */

/* An op's options. Set struct_size to sizeof(kolo_op_options), as kolo_op_options_init does: the struct
 * grows at its end, and kolo takes the fields a smaller (older) struct lacks at their defaults. A
 * struct_size that is not a size kolo knows is refused. Fields an op does not use are ignored. */
typedef struct kolo_op_options {
  uint32_t struct_size;
  int32_t process_set;     /* 0 (default): every rank; else an id from kolo_add_process_set */
  const char* name;        /* the op's name, the same on every rank; NULL or "" (default): numbered */
  int32_t blocking;        /* 1: returns once the op is done (see kolo::allreduce; KOLO_CALLER_DRIVES) */
  int32_t reduce_op;       /* allreduce, reducescatter: a kolo_reduce_op (default KOLO_AVERAGE) */
  double prescale_factor;  /* allreduce, reducescatter: applied to the input (default 1.0) */
  double postscale_factor; /* allreduce, reducescatter: applied to the result (default 1.0) */
  int32_t compression;     /* allreduce: a kolo_compression (default KOLO_COMPRESSION_NONE) */
  int32_t root_rank;       /* broadcast: a job rank, in the process set (default 0) */
  const int64_t* splits;   /* alltoall: rows for each rank of the set; NULL (default): an even split */
  int32_t num_splits;
  kolo_allocate_fn allocate; /* allgather, alltoall: NULL (default): kolo allocates (kolo_output) */
  void* allocate_data;
  kolo_done_fn done;       /* NULL (default): none */
  void* done_data;
  kolo_output** output;    /* blocking: receives the op's kolo_output, as kolo_wait's (may be NULL) */
} kolo_op_options;

/* The defaults, struct_size included. */
KOLO_EXPORT void kolo_op_options_init(kolo_op_options* options);

/* output may be the input (in place). */
KOLO_EXPORT int32_t kolo_allreduce(const kolo_tensor* input, const kolo_tensor* output,
                                   const kolo_op_options* options, kolo_handle* handle);
KOLO_EXPORT int32_t kolo_allgather(const kolo_tensor* input, const kolo_op_options* options, kolo_handle* handle);
/* A process set's broadcast: the root stays a job rank and must be in the set. */
KOLO_EXPORT int32_t kolo_broadcast(const kolo_tensor* input, const kolo_tensor* output,
                                   const kolo_op_options* options, kolo_handle* handle);
/* splits count the set's ranks. */
KOLO_EXPORT int32_t kolo_alltoall(const kolo_tensor* input, const kolo_op_options* options, kolo_handle* handle);
KOLO_EXPORT int32_t kolo_reducescatter(const kolo_tensor* input, const kolo_tensor* output,
                                       const kolo_op_options* options, kolo_handle* handle);
KOLO_EXPORT int32_t kolo_barrier(const kolo_op_options* options, kolo_handle* handle);
/* See kolo::join_async (every rank: process_set must be 0); the output's kolo_output_last_joined_rank
 * tells the last rank to join. */
KOLO_EXPORT int32_t kolo_join(const kolo_op_options* options, kolo_handle* handle);
KOLO_EXPORT int64_t kolo_reducescatter_rows(int64_t total_rows, int32_t rank, int32_t size);

/* ---- Process sets (see kolo::add_process_set) ----------------------------------------------------
 * Ops run among every rank (process set 0), or among the ranks of the set their options name. */
/* Collective over every rank, each passing the same ranks: *id receives the new set's id. */
KOLO_EXPORT int32_t kolo_add_process_set(const int32_t* ranks, int32_t count, int32_t* id);
/* Collective over every rank; refused while the set has ops in flight. */
KOLO_EXPORT int32_t kolo_remove_process_set(int32_t id);
/* The set's size (its ranks' count), or -1 for an unknown set (kolo_last_error says why). */
KOLO_EXPORT int32_t kolo_process_set_size(int32_t id);
/* This rank's place in the set, -1 when not a member or the set is unknown. */
KOLO_EXPORT int32_t kolo_process_set_rank(int32_t id);
/* Copies up to `capacity` of the set's job ranks (ascending) into `ranks`; returns a status. */
KOLO_EXPORT int32_t kolo_process_set_ranks(int32_t id, int32_t* ranks, int32_t capacity);
/* Copies up to `capacity` ids of the sets known here (0 first) into `ids`; returns how many there are. */
KOLO_EXPORT int32_t kolo_process_set_ids(int32_t* ids, int32_t capacity);

/* 1: done, 0: in flight, -1: unknown handle (kolo_last_error says which). Does not release the handle. */
KOLO_EXPORT int32_t kolo_poll(kolo_handle handle);
/* Waits (timeout_seconds < 0: without limit) and releases the handle, returning its status. On
 * KOLO_TIMEOUT the handle stays valid; a handle never issued or already waited on: KOLO_UNKNOWN_HANDLE. output may be NULL; else *output receives a kolo_output
 * (free it with kolo_output_free) or NULL when the op produced nothing beyond its status. */
KOLO_EXPORT int32_t kolo_wait(kolo_handle handle, double timeout_seconds, kolo_output** output);
/* GPU ops: waits only until kolo has launched the op on the GPU, then makes `stream` (a
 * cudaStream_t; NULL: the default stream) wait for it on the device, and releases the handle (see
 * kolo::wait_on_stream). Host ops: as kolo_wait without a timeout. */
KOLO_EXPORT int32_t kolo_wait_on_stream(kolo_handle handle, void* stream, kolo_output** output);

KOLO_EXPORT void* kolo_output_data(const kolo_output* output);
KOLO_EXPORT int32_t kolo_output_ndim(const kolo_output* output);
KOLO_EXPORT int64_t kolo_output_size_bytes(const kolo_output* output);
KOLO_EXPORT const int64_t* kolo_output_shape(const kolo_output* output);
KOLO_EXPORT int32_t kolo_output_num_received_splits(const kolo_output* output);
KOLO_EXPORT const int64_t* kolo_output_received_splits(const kolo_output* output);
KOLO_EXPORT int32_t kolo_output_last_joined_rank(const kolo_output* output);
KOLO_EXPORT void kolo_output_free(kolo_output* output);

/* "1.2.3" */
KOLO_EXPORT const char* kolo_version(void);
/* Which of MPI, CUDA and NCCL this build has, with versions; a heading line, then one line each. */
KOLO_EXPORT const char* kolo_build_summary(void);
/* The NCCL this process's GPU ops use, loading it now as the first GPU op would: its version, its file
   and how it was found ("already loaded": the framework's), or why none can be; "" in a build without
   NCCL. libkolo does not link NCCL: a process has one libnccl.so.2, and a framework's own wins. */
KOLO_EXPORT const char* kolo_nccl_runtime(void);

/* A job's key-value store served from this process, as kolorun --gloo serves its job's: a launcher that is
   not kolorun (kolo.ray's RayExecutor in Ray's driver) gives its ranks KOLO_STORE_ADDR, KOLO_STORE_PORT,
   KOLO_STORE_TOKEN and KOLO_JOB_ID, and the store outlives any rank. `bind_address`: "0.0.0.0" for every
   interface; `port` 0: an ephemeral one (kolo_store_server_port). `token`: the ranks' shared secret (a
   connection without it is closed unread). */
typedef struct kolo_store_server kolo_store_server;
KOLO_EXPORT int32_t kolo_store_server_start(const char* bind_address, int32_t port, const char* token,
                                            kolo_store_server** out);
KOLO_EXPORT int32_t kolo_store_server_port(const kolo_store_server* server);
/* Adds `delta` to the integer in `key` (a missing key counts as 0; *result, when not NULL, gets the sum), as a
   client of the job would: the launcher's word to its ranks (kolo/<job id>/hosts_changed: elastic, room for
   more ranks). */
KOLO_EXPORT int32_t kolo_store_server_add(kolo_store_server* server, const char* key, int64_t delta,
                                          int64_t* result);
/* Closes every connection, stops serving and frees the server. */
KOLO_EXPORT void kolo_store_server_free(kolo_store_server* server);

#ifdef __cplusplus
}
#endif

#endif /* KOLO_C_API_H_ */
