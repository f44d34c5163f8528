// kolo's own reduction (cpu/reduce.h) against Open MPI's, byte for byte: reduce_into against
// MPI_Reduce_local with kolo's mapping (comm/mpi/mpi_types.h: bools as uint8 by reduction_for, an Average
// as MPI_SUM, float16 and bfloat16 by kolo's user ops), and reduce_inputs against what the shared-memory
// path's MpiReduceInto computed through MPI (copied below). Every dtype and element-wise op, random data
// mixed with the cases where Open MPI's answer depends on more than arithmetic: NaNs with payloads on
// either side, signaling NaNs, infinities, signed zeros, integer overflow, bool bytes other than 0 and 1;
// every count up to past Open MPI's largest SIMD step and some long ones, at aligned and unaligned
// addresses, with the loops built for each instruction set the CPU has. Its own program under `mpirun -np 1` (its main initializes MPI; nothing of kolo's engine).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "comm/mpi/mpi_types.h"
#include "cpu_reduce_cases.h"
#include "cpu/reduce.h"
#include "cpu/sum_inputs.h"
#include "kolo/tensor.h"
#include "kolo/types.h"

namespace kolo {
namespace {

using namespace reduce_cases;  // NOLINT: the cases are this test's own

const DataType kDtypes[] = {DataType::kBool,    DataType::kUInt8,    DataType::kInt8,    DataType::kInt16,
                            DataType::kUInt16,  DataType::kInt32,    DataType::kInt64,   DataType::kFloat16,
                            DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64};
const ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct};

// The MPI world's ops: the built-in ones by kolo's mapping, the 16-bit ones as mpi_types.cc makes them.
class MpiOps {
 public:
  MpiOps() {
    EXPECT_TRUE(create_16bit_ops(DataType::kFloat16, half_[0]).ok());
    EXPECT_TRUE(create_16bit_ops(DataType::kBFloat16, half_[1]).ok());
  }
  ~MpiOps() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    for (auto& row : half_) {
      for (MPI_Op& op : row) {
        if (op != MPI_OP_NULL) MPI_Op_free(&op);
      }
    }
  }
  MPI_Op op(DataType dtype, ReduceOp op) const {
    if (is_16bit_float(dtype)) return half_[dtype == DataType::kFloat16 ? 0 : 1][static_cast<int>(op)];
    return mpi_builtin_op(reduction_for(dtype, op));
  }

 private:
  MPI_Op half_[2][kNumReduceOps];
};

const MpiOps& mpi_ops() {
  static const MpiOps ops;
  return ops;
}

void mpi_reduce_into(DataType dtype, ReduceOp op, const void* from, void* into, int64_t count) {
  ASSERT_EQ(MPI_Reduce_local(from, into, static_cast<int>(count), mpi_datatype(dtype), mpi_ops().op(dtype, op)),
            MPI_SUCCESS);
}

// What MpiReduceInto::operator() (comm/mpi/shm_reducer.cc, before cpu/reduce.h) computed: kolo's
// vectorized sum for MPI_SUM of float, double, int32 and int64, else MPI_Reduce_local input by input
// into `out` (or a copy of the first input), the others in order.
void mpi_reduce_inputs(DataType dtype, ReduceOp op, const char* const* inputs, int n, char* out, size_t bytes) {
  const MPI_Datatype type = mpi_datatype(dtype);
  const MPI_Op mop = mpi_ops().op(dtype, op);
  int size = 0;
  MPI_Type_size(type, &size);
  const size_t elem = static_cast<size_t>(size);
  int fast_dtype = -1;
  if (mop == MPI_SUM) {
    if (type == MPI_FLOAT) fast_dtype = static_cast<int>(DataType::kFloat32);
    if (type == MPI_DOUBLE) fast_dtype = static_cast<int>(DataType::kFloat64);
    if (type == MPI_INT32_T) fast_dtype = static_cast<int>(DataType::kInt32);
    if (type == MPI_INT64_T) fast_dtype = static_cast<int>(DataType::kInt64);
  }
  const int64_t count = static_cast<int64_t>(bytes / elem);
  if (fast_dtype >= 0 && sum_inputs(static_cast<DataType>(fast_dtype), inputs, n, out, count)) return;
  int first = 0;
  while (first < n && inputs[first] != out) ++first;
  if (first == n) {
    first = 0;
    std::memcpy(out, inputs[0], bytes);
  }
  for (int j = 0; j < n; ++j) {
    if (j != first) MPI_Reduce_local(inputs[j], out, static_cast<int>(count), type, mop);
  }
}

// reduce_into(from, into) against MPI_Reduce_local(from, into) for one dtype and op.
void expect_reduce_into_matches(DataType dtype, ReduceOp op, bool any_bool_byte) {
  std::mt19937_64 rng(0x6b6f6c6fu + static_cast<unsigned>(dtype) * 131u + static_cast<unsigned>(op));
  const size_t elem = dtype_size(dtype);
  for (int64_t count : counts()) {
    for (int64_t offset : {0, 1, 3}) {  // elements: the buffers' addresses aligned, and not
      const size_t bytes = static_cast<size_t>(count + offset) * elem;
      std::vector<char> from(bytes + 1), into(bytes + 1), want(bytes + 1), got(bytes + 1);
      fill(dtype, rng, from.data(), count + offset, any_bool_byte);
      fill(dtype, rng, into.data(), count + offset, any_bool_byte);
      // Every fourth buffer repeats the other's NaNs and zeros where they are: both operands awkward.
      if (rng() % 4 == 0) {
        for (int64_t i = 0; i < count + offset; ++i) {
          if (rng() % 2 == 0) std::memcpy(into.data() + i * elem, from.data() + i * elem, elem);
        }
      }
      want = into;
      const size_t at = static_cast<size_t>(offset) * elem;
      mpi_reduce_into(dtype, op, from.data() + at, want.data() + at, count);
      got = into;
      reduce_into(dtype, op, from.data() + at, got.data() + at, count);
      ASSERT_EQ(std::memcmp(want.data(), got.data(), bytes), 0)
          << what(dtype, op) << " at offset " << offset << ": "
          << first_difference(dtype, from.data() + at, into.data() + at, want.data() + at, got.data() + at, count);
      for (ReduceIsa isa : isas()) {
        got = into;
        reduce_into(isa, dtype, op, from.data() + at, got.data() + at, count);
        ASSERT_EQ(std::memcmp(want.data(), got.data(), bytes), 0)
            << what(dtype, op) << ", " << isa_name(isa) << " loops, at offset " << offset << ": "
            << first_difference(dtype, from.data() + at, into.data() + at, want.data() + at, got.data() + at, count);
      }
    }
  }
}

TEST(CpuReduceMatchesMpi, ReduceIntoEveryDtypeEveryOp) {
  for (DataType dtype : kDtypes) {
    for (ReduceOp op : kOps) {
      SCOPED_TRACE(what(dtype, op));
      expect_reduce_into_matches(dtype, op, false);
      if (HasFatalFailure()) return;
    }
  }
}

TEST(CpuReduceMatchesMpi, BoolBytesOtherThanZeroAndOne) {
  for (ReduceOp op : kOps) {
    SCOPED_TRACE(what(DataType::kBool, op));
    expect_reduce_into_matches(DataType::kBool, op, true);
    if (HasFatalFailure()) return;
  }
}

// The element pairs whose answers are Open MPI's choices rather than arithmetic, every pair of them, at
// every position of buffers of every length up to past 64 bytes: exhaustive where random data is not.
template <typename F, typename U>
void expect_awkward_pairs_match(DataType dtype) {
  constexpr int kMantissa = std::numeric_limits<F>::digits - 1;
  constexpr int kBits = static_cast<int>(sizeof(U)) * 8;
  const U sign = static_cast<U>(U(1) << (kBits - 1));
  const U inf = static_cast<U>(~U(0) >> 1 & ~((U(1) << kMantissa) - 1));
  const U quiet = static_cast<U>(U(1) << (kMantissa - 1));
  const U one = static_cast<U>(inf >> 1 & inf);  // biased exponent 0111...: 1.0
  const std::vector<U> awkward = {
      U(0), sign, inf, static_cast<U>(sign | inf), one, static_cast<U>(sign | one),
      static_cast<U>(inf | quiet | 1), static_cast<U>(inf | quiet | 2), static_cast<U>(sign | inf | quiet | 3),
      static_cast<U>(inf | 5), static_cast<U>(sign | inf | 6),  // signaling
      static_cast<U>(inf | quiet)};                             // the default NaN's payload
  std::vector<std::pair<U, U>> pairs;
  for (U a : awkward) {
    for (U b : awkward) pairs.emplace_back(a, b);
  }
  for (ReduceOp op : kOps) {
    for (int64_t count = 1; count <= 70; ++count) {
      for (size_t p = 0; p < pairs.size(); ++p) {
        std::vector<U> from(static_cast<size_t>(count)), into(static_cast<size_t>(count));
        for (int64_t i = 0; i < count; ++i) {
          const auto& pair = pairs[(p + static_cast<size_t>(i)) % pairs.size()];
          from[static_cast<size_t>(i)] = pair.first;
          into[static_cast<size_t>(i)] = pair.second;
        }
        std::vector<U> want = into;
        mpi_reduce_into(dtype, op, from.data(), want.data(), count);
        for (ReduceIsa isa : isas()) {
          std::vector<U> got = into;
          reduce_into(isa, dtype, op, from.data(), got.data(), count);
          ASSERT_EQ(want, got) << what(dtype, op) << ", " << isa_name(isa) << " loops, count " << count << ": "
                               << first_difference(dtype, reinterpret_cast<const char*>(from.data()),
                                                   reinterpret_cast<const char*>(into.data()),
                                                   reinterpret_cast<const char*>(want.data()),
                                                   reinterpret_cast<const char*>(got.data()), count);
        }
      }
    }
  }
}

TEST(CpuReduceMatchesMpi, NanPayloadsSignedZerosInfinitiesFloat32) {
  expect_awkward_pairs_match<float, uint32_t>(DataType::kFloat32);
}

TEST(CpuReduceMatchesMpi, NanPayloadsSignedZerosInfinitiesFloat64) {
  expect_awkward_pairs_match<double, uint64_t>(DataType::kFloat64);
}

TEST(CpuReduceMatchesMpi, NanPayloadsSignedZerosInfinities16Bit) {
  for (DataType dtype : {DataType::kFloat16, DataType::kBFloat16}) {
    for (ReduceOp op : kOps) {
      // Every pair of 16-bit patterns' high bytes (sign, exponent, top of the payload) with a few low bytes.
      std::vector<uint16_t> from, into;
      for (unsigned a = 0; a < 256; ++a) {
        for (unsigned b = 0; b < 256; ++b) {
          from.push_back(static_cast<uint16_t>(a << 8 | (b & 3)));
          into.push_back(static_cast<uint16_t>(b << 8 | (a & 5)));
        }
      }
      std::vector<uint16_t> want = into, got = into;
      mpi_reduce_into(dtype, op, from.data(), want.data(), static_cast<int64_t>(from.size()));
      reduce_into(dtype, op, from.data(), got.data(), static_cast<int64_t>(from.size()));
      ASSERT_EQ(want, got) << what(dtype, op);
    }
  }
}

// What the comparisons above pin down, said outright (Open MPI's avx component on x86-64; cpu/reduce.h).
#if defined(__x86_64__)
TEST(CpuReduceMatchesMpi, OpenMpisChoicesSaidOutright) {
  // 17 int8 elements: the first 16 are one 16-byte block (saturating), the 17th is the tail (wrapping).
  std::vector<int8_t> from(17, 100), into(17, 100);
  reduce_into(DataType::kInt8, ReduceOp::kSum, from.data(), into.data(), 17);
  EXPECT_EQ(into[0], 127);
  EXPECT_EQ(into[15], 127);
  EXPECT_EQ(into[16], -56);

  // 5 floats: 4 in a block, where max keeps `into`'s on a NaN or a tie of zeros; the 5th takes `from`'s.
  const float nan_a = from_bits<float>(0x7fc00001u), nan_b = from_bits<float>(0x7fc00002u);
  std::vector<float> f = {nan_a, 1.0f, -0.0f, nan_a, nan_a}, g = {1.0f, nan_b, 0.0f, nan_b, 1.0f};
  reduce_into(DataType::kFloat32, ReduceOp::kMax, f.data(), g.data(), 5);
  uint32_t bits[5];
  std::memcpy(bits, g.data(), sizeof bits);
  EXPECT_EQ(bits[0], 0x3f800000u);  // 1.0: into's
  EXPECT_EQ(bits[1], 0x7fc00002u);  // into's NaN
  EXPECT_EQ(bits[2], 0x00000000u);  // into's +0
  EXPECT_EQ(bits[3], 0x7fc00002u);  // into's NaN
  EXPECT_EQ(bits[4], 0x7fc00001u);  // tail: from's NaN

  // Sums of two NaNs: from's in a block, into's in the tail.
  std::vector<float> x = {nan_a, nan_a, nan_a, nan_a, nan_a}, y = {nan_b, nan_b, nan_b, nan_b, nan_b};
  reduce_into(DataType::kFloat32, ReduceOp::kSum, x.data(), y.data(), 5);
  std::memcpy(bits, y.data(), sizeof bits);
  EXPECT_EQ(bits[0], 0x7fc00001u);
  EXPECT_EQ(bits[4], 0x7fc00002u);
}
#endif

// reduce_inputs against MpiReduceInto's fold, for 1 to 5 inputs, `out` apart from them or each of them.
TEST(CpuReduceMatchesMpi, ReduceInputsMatchesTheMpiFold) {
  for (DataType dtype : kDtypes) {
    for (ReduceOp op : kOps) {
      SCOPED_TRACE(what(dtype, op));
      std::mt19937_64 rng(0x73686du + static_cast<unsigned>(dtype) * 17u + static_cast<unsigned>(op));
      const size_t elem = dtype_size(dtype);
      for (int64_t count : {0, 1, 7, 33, 130, 1000, 4096 + 13, 20011}) {
        const size_t bytes = static_cast<size_t>(count) * elem;
        for (int n = 1; n <= 5; ++n) {
          std::vector<std::vector<char>> original(static_cast<size_t>(n), std::vector<char>(bytes + 1));
          for (auto& in : original) fill(dtype, rng, in.data(), count);
          for (int alias = -1; alias < n; ++alias) {  // -1: `out` is none of the inputs
            std::vector<std::vector<char>> mine = original, theirs = original;
            std::vector<char> mine_out(bytes + 1), theirs_out(bytes + 1);
            std::vector<const char*> mine_in, theirs_in;
            for (int j = 0; j < n; ++j) {
              mine_in.push_back(mine[static_cast<size_t>(j)].data());
              theirs_in.push_back(theirs[static_cast<size_t>(j)].data());
            }
            char* mo = alias < 0 ? mine_out.data() : mine[static_cast<size_t>(alias)].data();
            char* to = alias < 0 ? theirs_out.data() : theirs[static_cast<size_t>(alias)].data();
            mpi_reduce_inputs(dtype, op, theirs_in.data(), n, to, bytes);
            reduce_inputs(dtype, op, mine_in.data(), n, mo, count);
            ASSERT_EQ(std::memcmp(to, mo, bytes), 0)
                << "count " << count << ", " << n << " inputs, out " << (alias < 0 ? "apart" : "aliasing input ")
                << (alias < 0 ? "" : std::to_string(alias)) << ": "
                << first_difference(dtype, original[0].data(), original[n > 1 ? 1 : 0].data(), to, mo, count);
            // The inputs that are not `out` are left as they were.
            for (int j = 0; j < n; ++j) {
              if (j != alias) {
                ASSERT_EQ(mine[static_cast<size_t>(j)], original[static_cast<size_t>(j)]) << "input " << j;
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace kolo

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  MPI_Init(&argc, &argv);
  const int rc = RUN_ALL_TESTS();
  MPI_Finalize();
  return rc;
}
