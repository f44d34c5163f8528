// kolo's batched copy kernel on a real GPU, against the same arithmetic run on the CPU
// (batch_math.h): every dtype and cast, odd sizes, empty pieces, misaligned pointers (the scalar
// path) and aligned ones (the vector path), thousands of pieces (several launches). Single process;
// run under compute-sanitizer by tools/gpu/run_gpu_suite.sh. Skips (exit 77) without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>

#include "cuda/batch_math.h"
#include "cuda/batched_copy.h"

namespace kolo {
namespace {

struct Case {
  DataType from, to;
};

std::vector<Case> cases() {
  std::vector<Case> c;
  for (DataType d : {DataType::kUInt8, DataType::kInt8, DataType::kUInt16, DataType::kInt16, DataType::kInt32, DataType::kInt64,
                     DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64, DataType::kBool}) {
    c.push_back({d, d});
  }
  c.push_back({DataType::kFloat32, DataType::kFloat16});
  c.push_back({DataType::kFloat32, DataType::kBFloat16});
  c.push_back({DataType::kFloat16, DataType::kFloat32});
  c.push_back({DataType::kBFloat16, DataType::kFloat32});
  c.push_back({DataType::kInt16, DataType::kInt32});
  c.push_back({DataType::kInt32, DataType::kInt16});
  c.push_back({DataType::kUInt16, DataType::kInt32});
  c.push_back({DataType::kInt32, DataType::kUInt16});
  return c;
}

// Finite values of the dtype (random bits for integers), so that results compare bytewise.
std::vector<char> values(DataType dtype, int64_t n, std::mt19937* rng) {
  std::vector<char> out(static_cast<size_t>(n) * dtype_size(dtype));
  std::uniform_real_distribution<float> real(-100.f, 100.f);
  for (int64_t i = 0; i < n; ++i) {
    char* p = out.data() + i * static_cast<int64_t>(dtype_size(dtype));
    const float f = real(*rng);
    if (dtype == DataType::kFloat16) {
      const uint16_t h = float_to_fp16(f);
      std::memcpy(p, &h, 2);
    } else if (dtype == DataType::kBFloat16) {
      const uint16_t h = float_to_bf16(f);
      std::memcpy(p, &h, 2);
    } else if (dtype == DataType::kFloat32) {
      std::memcpy(p, &f, 4);
    } else if (dtype == DataType::kFloat64) {
      const double d = f;
      std::memcpy(p, &d, 8);
    } else if (dtype == DataType::kBool) {
      *p = static_cast<char>((*rng)() & 1);
    } else {
      for (size_t k = 0; k < dtype_size(dtype); ++k) p[k] = static_cast<char>((*rng)() & 0xff);
    }
  }
  return out;
}

class BatchedCopyKernel : public ::testing::TestWithParam<Case> {};

TEST_P(BatchedCopyKernel, MatchesTheCpuArithmeticBitForBit) {
  const Case c = GetParam();
  const int64_t in_elem = static_cast<int64_t>(dtype_size(c.from)), out_elem = static_cast<int64_t>(dtype_size(c.to));
  std::mt19937 rng(11);
  std::uniform_int_distribution<int64_t> size(0, 3 * batch::kChunkElements);
  const int pieces = 2345;  // three launches
  std::vector<int64_t> counts(pieces), offsets(pieces);
  int64_t total = 0;
  for (int i = 0; i < pieces; ++i) {
    counts[i] = i % 9 == 0 ? 0 : size(rng) / (i % 5 == 0 ? 1 : 40);
    // Every third piece starts one element off a 16-byte boundary: the scalar path.
    offsets[i] = total + (i % 3 == 0 ? 1 : 0);
    total = (offsets[i] + counts[i] + 15) / 16 * 16;
  }
  const std::vector<char> host_in = values(c.from, total, &rng);
  void *dev_in = nullptr, *dev_out = nullptr;
  ASSERT_EQ(cudaMalloc(&dev_in, static_cast<size_t>(total * in_elem) + 16), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dev_out, static_cast<size_t>(total * out_elem) + 16), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dev_in, host_in.data(), host_in.size(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(dev_out, 0, static_cast<size_t>(total * out_elem)), cudaSuccess);
  std::vector<char> want(static_cast<size_t>(total * out_elem), 0);
  std::vector<CopyPiece> on_device, on_host;
  for (int i = 0; i < pieces; ++i) {
    // Every seventh piece has no source: the identity fill.
    const bool fill = i % 7 == 3;
    on_device.push_back(CopyPiece{fill ? nullptr : static_cast<const char*>(dev_in) + offsets[i] * in_elem,
                                  static_cast<char*>(dev_out) + offsets[i] * out_elem, counts[i]});
    on_host.push_back(CopyPiece{fill ? nullptr : host_in.data() + offsets[i] * in_elem,
                                want.data() + offsets[i] * out_elem, counts[i]});
  }
  const bool floating = dtype_is_floating(c.from);
  for (double scale : {1.0, 0.375}) {
    if (scale != 1.0 && c.from == DataType::kBool) continue;  // bools never scale
    const int64_t divisor = floating || c.from == DataType::kBool ? 1 : 3;  // integers: an Average's division
    const CopyTransform t{c.from, c.to, scale, divisor, ReduceOp::kMax};
    ASSERT_TRUE(launch_batched_copy(on_device, t, nullptr).ok());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    ASSERT_TRUE(batch::batched_copy_on_host(on_host, t).ok());
    std::vector<char> got(want.size());
    ASSERT_EQ(cudaMemcpy(got.data(), dev_out, got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    for (int i = 0; i < pieces; ++i) {
      const size_t at = static_cast<size_t>(offsets[i] * out_elem), n = static_cast<size_t>(counts[i] * out_elem);
      ASSERT_EQ(std::memcmp(got.data() + at, want.data() + at, n), 0)
          << dtype_name(c.from) << "->" << dtype_name(c.to) << " scale " << scale << " piece " << i << " of "
          << counts[i] << " elements";
    }
  }
  cudaFree(dev_in);
  cudaFree(dev_out);
}

INSTANTIATE_TEST_SUITE_P(EveryPair, BatchedCopyKernel, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return std::string(dtype_name(i.param.from)) + "_to_" + dtype_name(i.param.to);
                         });

}  // namespace
}  // namespace kolo

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    std::printf("skipped: no GPU here (cudaGetDeviceCount: %s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return 77;
  }
  return RUN_ALL_TESTS();
}
