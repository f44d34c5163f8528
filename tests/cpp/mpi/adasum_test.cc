// Adasum (ReduceOp::kAdasum) at whatever number of ranks mpirun started (powers of two and not):
// against a reference of the algorithm computed here from every rank's inputs, exact where the
// arithmetic is (equal tensors give themselves, orthogonal ones their sum), fused and alone, every
// floating dtype, scaling, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "mpi_test_util.h"

namespace kolo {
namespace {

using testing::Buffer;

// Rank r's element i of tensor t: values of both signs and of different sizes per rank.
double input(int r, int t, size_t i) {
  return std::sin(0.37 * static_cast<double>(i) + 1.3 * r + 0.7 * t) * (1.0 + 0.25 * r) + 0.1 * (r % 2);
}

// a, b -> (1 - a.b / 2|a|^2) a + (1 - a.b / 2|b|^2) b, rounded to the dtype as the collective does.
std::vector<double> combine(const std::vector<double>& a, const std::vector<double>& b, const Buffer& like) {
  double dot = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  const double tiny = std::sqrt(2.2250738585072014e-308);
  const double ca = aa >= tiny ? 1.0 - dot / aa * 0.5 : 1.0;
  const double cb = bb >= tiny ? 1.0 - dot / bb * 0.5 : 1.0;
  std::vector<double> out(a.size());
  // 16-bit tensors are combined in float; the others in their own type.
  const bool as_float = like.dtype() != DataType::kFloat64;
  for (size_t i = 0; i < a.size(); ++i) {
    const double v = ca * a[i] + cb * b[i];
    out[i] = as_float ? static_cast<double>(static_cast<float>(v)) : v;
  }
  return out;
}

// The tree: ranks past the largest power of two p fold into rank - p, then (0 + 1) + (2 + 3) ...
std::vector<double> reference(int t, size_t n, const Buffer& like) {
  std::vector<std::vector<double>> v(static_cast<size_t>(size()));
  for (int r = 0; r < size(); ++r) {
    for (size_t i = 0; i < n; ++i) v[r].push_back(like.rounded(input(r, t, i)));
  }
  int p = 1;
  while (p * 2 <= size()) p *= 2;
  for (int r = p; r < size(); ++r) v[r - p] = combine(v[r - p], v[r], like);
  for (int level = 1; level < p; level *= 2) {
    for (int r = 0; r < p; r += 2 * level) v[r] = combine(v[r], v[r + level], like);
  }
  for (double& x : v[0]) x = like.rounded(x);
  return v[0];
}

AllreduceOptions adasum() {
  AllreduceOptions o;
  o.op = ReduceOp::kAdasum;
  return o;
}

double tolerance(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat64: return 1e-12;
    case DataType::kFloat32: return 1e-5;
    default: return 1e-2;  // 16-bit results, one rounding apart at most
  }
}

class AdasumTest : public ::testing::TestWithParam<DataType> {};

TEST_P(AdasumTest, FusedTensorsMatchTheReferenceTensorByTensor) {
  const DataType dtype = GetParam();
  const std::vector<size_t> sizes = {1, 5, 1000, 17, 0, 4096};
  std::vector<Buffer> buffers;
  for (size_t t = 0; t < sizes.size(); ++t) {
    buffers.emplace_back(dtype, std::vector<int64_t>{static_cast<int64_t>(sizes[t])});
    for (size_t i = 0; i < sizes[t]; ++i) buffers[t].set(i, input(rank(), static_cast<int>(t), i));
  }
  // All enqueued before waiting: fused into one Adasum, each tensor with its own coefficients.
  std::vector<Handle> handles;
  for (size_t t = 0; t < sizes.size(); ++t) {
    handles.push_back(allreduce_async("adasum." + std::to_string(t), buffers[t].view(), buffers[t].view(), adasum()));
  }
  for (Handle h : handles) ASSERT_TRUE(wait(h).ok());
  for (size_t t = 0; t < sizes.size(); ++t) {
    const std::vector<double> want = reference(static_cast<int>(t), sizes[t], buffers[t]);
    for (size_t i = 0; i < sizes[t]; ++i) {
      ASSERT_NEAR(buffers[t].get(i), want[i], tolerance(dtype) * (1.0 + std::fabs(want[i])))
          << "tensor " << t << " element " << i;
    }
  }
}

TEST_P(AdasumTest, EqualTensorsGiveThemselvesAndOrthogonalOnesTheirSum) {
  const DataType dtype = GetParam();
  // Equal everywhere: each step is a/2 + a/2 = a, exactly.
  Buffer same(dtype, {9});
  for (size_t i = 0; i < 9; ++i) same.set(i, static_cast<double>(i) - 4.0);
  Buffer out(dtype, {9});
  ASSERT_TRUE(allreduce("adasum.same", same.view(), out.view(), adasum()).ok());
  for (size_t i = 0; i < 9; ++i) EXPECT_EQ(out.get(i), static_cast<double>(i) - 4.0) << i;
  // Rank r holds 2^r at element r: orthogonal, so every step is the plain sum.
  Buffer basis(dtype, {static_cast<int64_t>(size())});
  basis.set(static_cast<size_t>(rank()), std::ldexp(1.0, rank()));
  ASSERT_TRUE(allreduce("adasum.orthogonal", basis.view(), basis.view(), adasum()).ok());
  for (int r = 0; r < size(); ++r) EXPECT_EQ(basis.get(static_cast<size_t>(r)), std::ldexp(1.0, r)) << r;
}

TEST_P(AdasumTest, ScaleFactorsApplyBeforeAndAfter) {
  const DataType dtype = GetParam();
  Buffer b(dtype, {4});
  for (size_t i = 0; i < 4; ++i) b.set(i, 1.0 + static_cast<double>(i));
  AllreduceOptions o = adasum();
  o.prescale_factor = 4.0;
  o.postscale_factor = 0.5;
  ASSERT_TRUE(allreduce("adasum.scaled", b.view(), b.view(), o).ok());
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(b.get(i), 2.0 * (1.0 + static_cast<double>(i))) << i;
}

INSTANTIATE_TEST_SUITE_P(Floating, AdasumTest,
                         ::testing::Values(DataType::kFloat32, DataType::kFloat64, DataType::kFloat16,
                                           DataType::kBFloat16),
                         [](const ::testing::TestParamInfo<DataType>& info) { return dtype_name(info.param); });

TEST(Adasum, RefusesWhatItCannotCombineNamingTheTensor) {
  Buffer ints(DataType::kInt32, {3});
  Status s = allreduce("adasum.ints", ints.view(), ints.view(), adasum());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "allreduce of tensor 'adasum.ints' on rank " + std::to_string(rank()) +
                             ": Adasum combines floating-point tensors (float16, bfloat16, float32, float64), not int32");
  Buffer f(DataType::kFloat32, {4});
  AllreduceOptions o = adasum();
  o.compression = Compression::kFloat16;
  s = allreduce("adasum.compressed", f.view(), f.view(), o);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("compression does not apply to Adasum"), std::string::npos) << s.message();
  // The engine still works after refusing.
  ASSERT_TRUE(allreduce("adasum.after", f.view(), f.view(), adasum()).ok());
}

}  // namespace
}  // namespace kolo
