// The batched copy kernel: every piece of a fused group in one launch (a few launches for
// thousands), each block one chunk of one piece, 16-byte loads and stores where the memory is
// aligned. The arithmetic and the index math are batch_math.h's, shared with the CPU tests.
#include "cuda/batched_copy.h"

#include <cuda_runtime.h>

#include <string>
#include <type_traits>

#include "cuda/batch_math.h"

namespace kolo {
namespace {

using batch::kThreadsPerBlock;

// A launch's descriptors, passed by value in the kernel's parameters (no upload, no memory to
// manage). Two sizes, so that a small group does not pay for copying 32 KB of parameters.
template <int Cap>
struct Params {
  int n;
  int identity_op;
  batch::Scale scale;
  int64_t first_block[Cap + 1];
  const void* src[Cap];
  void* dst[Cap];
  int64_t count[Cap];
};
static_assert(sizeof(Params<batch::kMaxPiecesPerLaunch>) <= 32764, "kernel parameters are limited to 32764 bytes");

template <typename T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

__device__ inline bool aligned(const void* p, size_t to) { return reinterpret_cast<uintptr_t>(p) % to == 0; }

// Bytes [0, bytes) from src to dst, 16 at a time where both are 16-byte aligned.
__device__ void copy_bytes(const char* src, char* dst, int64_t bytes) {
  int64_t done = 0;
  if (aligned(src, 16) && aligned(dst, 16)) {
    const int64_t n = bytes / 16;
    const uint4* s = reinterpret_cast<const uint4*>(src);
    uint4* d = reinterpret_cast<uint4*>(dst);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) d[i] = s[i];
    done = n * 16;
  }
  for (int64_t i = done + threadIdx.x; i < bytes; i += blockDim.x) dst[i] = src[i];
}

// Elements [begin, end) converted, V at a time (16 bytes of input) where both sides are aligned.
template <typename From, typename To>
__device__ void convert_elements(const From* src, To* dst, int64_t begin, int64_t end, const batch::Scale& s,
                                 int identity_op) {
  constexpr int V = sizeof(From) >= 16 ? 1 : 16 / static_cast<int>(sizeof(From));
  using In = Vec<From, V>;
  using Out = Vec<To, V>;
  int64_t first_scalar = begin;
  if (src != nullptr && aligned(src + begin, sizeof(In)) && aligned(dst + begin, sizeof(Out))) {
    const int64_t n = (end - begin) / V;
    const In* in = reinterpret_cast<const In*>(src + begin);
    Out* out = reinterpret_cast<Out*>(dst + begin);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const In x = in[i];
      Out y;
#pragma unroll
      for (int k = 0; k < V; ++k) y.v[k] = batch::convert<From, To>(x.v[k], s);
      out[i] = y;
    }
    first_scalar = begin + n * V;
  }
  batch::copy_range<From, To>(src, dst, first_scalar, end, threadIdx.x, blockDim.x, s, identity_op);
}

template <typename From, typename To, int Cap>
__global__ void __launch_bounds__(kThreadsPerBlock) batched_copy_kernel(const __grid_constant__ Params<Cap> p) {
  const int64_t block = blockIdx.x;
  const int k = batch::piece_of_block(p.first_block, p.n, block);
  int64_t begin = 0, end = 0;
  batch::chunk_of(p.count[k], block - p.first_block[k], &begin, &end);
  const From* src = static_cast<const From*>(p.src[k]);
  To* dst = static_cast<To*>(p.dst[k]);
  if (batch::bitwise_copy<From, To>(src, p.scale)) {
    copy_bytes(reinterpret_cast<const char*>(src + begin), reinterpret_cast<char*>(dst + begin),
               (end - begin) * static_cast<int64_t>(sizeof(From)));
    return;
  }
  convert_elements<From, To>(src, dst, begin, end, p.scale, p.identity_op);
}

std::string cuda_error(cudaError_t e) { return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e); }

template <int Cap, typename From, typename To>
Status launch_one(const std::vector<CopyPiece>& pieces, const batch::Launch& l, const batch::Scale& s, int identity_op,
                  cudaStream_t stream) {
  Params<Cap> p;
  p.n = l.n;
  p.identity_op = identity_op;
  p.scale = s;
  for (int k = 0; k < l.n; ++k) {
    const CopyPiece& piece = pieces[l.first_piece + static_cast<size_t>(k)];
    p.first_block[k] = l.first_block[static_cast<size_t>(k)];
    p.src[k] = piece.src;
    p.dst[k] = piece.dst;
    p.count[k] = piece.count;
  }
  p.first_block[l.n] = l.blocks();
  if (l.blocks() > 0x7fffffff) return Status::Unsupported("a batched copy of more than 2^31 blocks");
  batched_copy_kernel<From, To, Cap><<<static_cast<unsigned>(l.blocks()), kThreadsPerBlock, 0, stream>>>(p);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return Status::Internal("launching kolo's batched copy kernel: " + cuda_error(e));
  return Status::OK();
}

template <typename From, typename To>
struct LaunchOnDevice {
  static Status run(const std::vector<CopyPiece>& pieces, const batch::Launch& l, const batch::Scale& s,
                    int identity_op, cudaStream_t stream) {
    if (l.n <= 64) return launch_one<64, From, To>(pieces, l, s, identity_op, stream);
    return launch_one<batch::kMaxPiecesPerLaunch, From, To>(pieces, l, s, identity_op, stream);
  }
};

}  // namespace

Status launch_batched_copy(const std::vector<CopyPiece>& pieces, const CopyTransform& t, DeviceStream stream) {
  for (const batch::Launch& l : batch::plan_launches(pieces)) {
    Status s = batch::dispatch<LaunchOnDevice>(t.from, t.to, pieces, l, batch::scale_of(t), static_cast<int>(t.identity),
                                               static_cast<cudaStream_t>(stream));
    if (!s.ok()) return s;
  }
  return Status::OK();
}

}  // namespace kolo
