// KOLO_HD marks a function that runs on the host and, compiled by nvcc, on a GPU too: the
// arithmetic of kolo's batched kernels is written once, in such functions, and unit-tested on the CPU.
#pragma once

#if defined(__CUDACC__)
#define KOLO_HD __host__ __device__
#else
#define KOLO_HD
#endif
