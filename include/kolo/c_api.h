/* kolo's C ABI: the same functions as kolo.h, for bindings (kolo's Python package uses only this)
 * and other languages. Stable: functions and enum values are only ever added.
 *
 * Functions returning int32_t return a kolo_status_code; after a non-zero return,
 * kolo_last_error() gives the message on the calling thread. Async functions return a handle,
 * which is always valid: a call rejected at once gives a handle that has already failed. */
#ifndef KOLO_C_API_H_
#define KOLO_C_API_H_

#include <stddef.h>
#include <stdint.h>

#include "kolo/export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KOLO_C_API_VERSION 1

typedef enum {
  KOLO_OK = 0,
  KOLO_INVALID_ARGUMENT = 1,
  KOLO_NOT_INITIALIZED = 2,
  KOLO_MISMATCH = 3,
  KOLO_ABORTED = 4,
  KOLO_INTERNAL = 5,
  KOLO_UNSUPPORTED = 6,
  KOLO_TIMEOUT = 7,
  KOLO_PEERS_FAILED = 8
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
 * rejected at once). user_data tells the caller which op it was. */
typedef void (*kolo_done_fn)(void* user_data, int32_t status_code, const char* message);
/* For allgather and alltoall: memory for an output of this shape (the input's dtype and device).
 * Return NULL to fail the op (NULL is fine for an empty output). Pass no allocator to let kolo
 * allocate; the memory then comes back through kolo_output. */
typedef void* (*kolo_allocate_fn)(void* user_data, int32_t ndim, const int64_t* shape);

/* An op's result beyond its status; owns memory kolo allocated. */
typedef struct kolo_output kolo_output;

KOLO_EXPORT const char* kolo_last_error(void);

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
KOLO_EXPORT int32_t kolo_is_homogeneous(void);
/* 1 when built with CUDA; NCCL's version code (major * 10000 + minor * 100 + patch) when built with
 * NCCL, else 0. */
KOLO_EXPORT int32_t kolo_cuda_built(void);
KOLO_EXPORT int32_t kolo_nccl_built(void);
/* See kolo::start_timeline and kolo::stop_timeline. */
KOLO_EXPORT int32_t kolo_start_timeline(const char* path, int32_t mark_cycles);
KOLO_EXPORT int32_t kolo_stop_timeline(void);

KOLO_EXPORT kolo_handle kolo_allreduce_async(const char* name, const kolo_tensor* input, const kolo_tensor* output,
                                             int32_t op, double prescale_factor, double postscale_factor,
                                             kolo_done_fn done, void* done_data);
/* As kolo_allreduce_async, with a kolo_compression. */
KOLO_EXPORT kolo_handle kolo_allreduce_async_compressed(const char* name, const kolo_tensor* input,
                                                        const kolo_tensor* output, int32_t op, double prescale_factor,
                                                        double postscale_factor, int32_t compression, kolo_done_fn done,
                                                        void* done_data);
KOLO_EXPORT kolo_handle kolo_allgather_async(const char* name, const kolo_tensor* input, kolo_allocate_fn allocate,
                                             void* allocate_data, kolo_done_fn done, void* done_data);
KOLO_EXPORT kolo_handle kolo_broadcast_async(const char* name, const kolo_tensor* input, const kolo_tensor* output,
                                             int32_t root_rank, kolo_done_fn done, void* done_data);
/* splits may be NULL (num_splits 0) for an even split. */
KOLO_EXPORT kolo_handle kolo_alltoall_async(const char* name, const kolo_tensor* input, const int64_t* splits,
                                            int32_t num_splits, kolo_allocate_fn allocate, void* allocate_data,
                                            kolo_done_fn done, void* done_data);
KOLO_EXPORT kolo_handle kolo_reducescatter_async(const char* name, const kolo_tensor* input,
                                                 const kolo_tensor* output, int32_t op, double prescale_factor,
                                                 double postscale_factor, kolo_done_fn done, void* done_data);
KOLO_EXPORT kolo_handle kolo_barrier_async(kolo_done_fn done, void* done_data);
/* See kolo::join_async; the output's kolo_output_last_joined_rank tells the last rank to join. */
KOLO_EXPORT kolo_handle kolo_join_async(kolo_done_fn done, void* done_data);
KOLO_EXPORT int64_t kolo_reducescatter_rows(int64_t total_rows, int32_t rank, int32_t size);

/* ---- Process sets (see kolo::add_process_set) ----------------------------------------------------
 * The ops above run among every rank (process set 0). Their _in_set variants run among the ranks of
 * one set; a broadcast's root stays a job rank and must be in the set; alltoall's splits count the
 * set's ranks. */
KOLO_EXPORT kolo_handle kolo_allreduce_in_set_async(int32_t process_set, const char* name, const kolo_tensor* input,
                                                    const kolo_tensor* output, int32_t op, double prescale_factor,
                                                    double postscale_factor, int32_t compression, kolo_done_fn done,
                                                    void* done_data);
/* Blocking: returns once the allreduce is done (see kolo::allreduce; KOLO_CALLER_DRIVES). */
KOLO_EXPORT int32_t kolo_allreduce_in_set(int32_t process_set, const char* name, const kolo_tensor* input,
                                          const kolo_tensor* output, int32_t op, double prescale_factor,
                                          double postscale_factor, int32_t compression);
KOLO_EXPORT kolo_handle kolo_allgather_in_set_async(int32_t process_set, const char* name, const kolo_tensor* input,
                                                    kolo_allocate_fn allocate, void* allocate_data, kolo_done_fn done,
                                                    void* done_data);
KOLO_EXPORT kolo_handle kolo_broadcast_in_set_async(int32_t process_set, const char* name, const kolo_tensor* input,
                                                    const kolo_tensor* output, int32_t root_rank, kolo_done_fn done,
                                                    void* done_data);
KOLO_EXPORT kolo_handle kolo_alltoall_in_set_async(int32_t process_set, const char* name, const kolo_tensor* input,
                                                   const int64_t* splits, int32_t num_splits, kolo_allocate_fn allocate,
                                                   void* allocate_data, kolo_done_fn done, void* done_data);
KOLO_EXPORT kolo_handle kolo_reducescatter_in_set_async(int32_t process_set, const char* name,
                                                        const kolo_tensor* input, const kolo_tensor* output,
                                                        int32_t op, double prescale_factor, double postscale_factor,
                                                        kolo_done_fn done, void* done_data);
KOLO_EXPORT kolo_handle kolo_barrier_in_set_async(int32_t process_set, kolo_done_fn done, void* done_data);
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

/* 1: done, 0: in flight, negative: unknown handle. Does not release the handle. */
KOLO_EXPORT int32_t kolo_poll(kolo_handle handle);
/* Waits (timeout_seconds < 0: without limit) and releases the handle, returning its status. On
 * KOLO_TIMEOUT the handle stays valid. output may be NULL; else *output receives a kolo_output
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

#ifdef __cplusplus
}
#endif

#endif /* KOLO_C_API_H_ */
