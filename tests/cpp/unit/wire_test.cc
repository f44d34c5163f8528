#include <gtest/gtest.h>

#include "engine/wire.h"

namespace kolo {
namespace {

Request sample_request() {
  Request q;
  q.name = "layer1/conv.weight";
  q.rank = 3;
  q.kind = OpKind::kAllgather;
  q.dtype = DataType::kBFloat16;
  q.device = DeviceType::kCUDA;
  q.reduce_op = ReduceOp::kMax;
  q.root = 2;
  q.prescale = 0.5;
  q.postscale = 4.0;
  q.compression = Compression::kBFloat16;
  q.shape = {7, 3, 0};
  q.waited_seconds = 1.25;
  return q;
}

Response sample_response() {
  Response r;
  r.type = Response::Type::kError;
  r.name = "grad";
  r.kind = OpKind::kAllgather;
  r.dtype = DataType::kInt64;
  r.device = DeviceType::kCPU;
  r.reduce_op = ReduceOp::kProduct;
  r.root = 1;
  r.prescale = 2;
  r.postscale = 0.25;
  r.compression = Compression::kFloat16;
  r.shape = {10, 2};
  r.first_dims = {3, 0, 7};
  r.error = "Mismatched dtype";
  r.error_code = StatusCode::kAborted;
  return r;
}

TEST(Wire, RequestsRoundTrip) {
  std::vector<Request> in = {sample_request(), Request()}, out;
  ASSERT_TRUE(decode_requests(encode_requests(in), &out).ok());
  ASSERT_EQ(out.size(), 2u);
  const Request& q = out[0];
  EXPECT_EQ(q.name, "layer1/conv.weight");
  EXPECT_EQ(q.rank, 3);
  EXPECT_EQ(q.kind, OpKind::kAllgather);
  EXPECT_EQ(q.dtype, DataType::kBFloat16);
  EXPECT_EQ(q.device, DeviceType::kCUDA);
  EXPECT_EQ(q.reduce_op, ReduceOp::kMax);
  EXPECT_EQ(q.root, 2);
  EXPECT_EQ(q.prescale, 0.5);
  EXPECT_EQ(q.postscale, 4.0);
  EXPECT_EQ(q.compression, Compression::kBFloat16);
  EXPECT_EQ(q.shape, (std::vector<int64_t>{7, 3, 0}));
  EXPECT_EQ(q.waited_seconds, 1.25);
  EXPECT_EQ(out[1].name, "");
}

TEST(Wire, ResponsesRoundTrip) {
  std::vector<Response> out;
  ASSERT_TRUE(decode_responses(encode_responses({sample_response()}), &out).ok());
  ASSERT_EQ(out.size(), 1u);
  const Response& r = out[0];
  EXPECT_EQ(r.type, Response::Type::kError);
  EXPECT_EQ(r.name, "grad");
  EXPECT_EQ(r.dtype, DataType::kInt64);
  EXPECT_EQ(r.reduce_op, ReduceOp::kProduct);
  EXPECT_EQ(r.root, 1);
  EXPECT_EQ(r.prescale, 2.0);
  EXPECT_EQ(r.postscale, 0.25);
  EXPECT_EQ(r.compression, Compression::kFloat16);
  EXPECT_EQ(r.shape, (std::vector<int64_t>{10, 2}));
  EXPECT_EQ(r.first_dims, (std::vector<int64_t>{3, 0, 7}));
  EXPECT_EQ(r.error, "Mismatched dtype");
  EXPECT_EQ(r.error_code, StatusCode::kAborted);
}

TEST(Wire, EveryTruncationIsRejected) {
  const std::string requests = encode_requests({sample_request(), sample_request()});
  const std::string responses = encode_responses({sample_response(), sample_response()});
  std::vector<Request> q;
  std::vector<Response> r;
  for (size_t n = 0; n < requests.size(); ++n) {
    EXPECT_FALSE(decode_requests(requests.substr(0, n), &q).ok()) << n;
  }
  for (size_t n = 0; n < responses.size(); ++n) {
    EXPECT_FALSE(decode_responses(responses.substr(0, n), &r).ok()) << n;
  }
}

TEST(Wire, RejectsMalformedFields) {
  std::vector<Request> q;
  std::string bytes = encode_requests({sample_request()});
  EXPECT_EQ(decode_requests(bytes + "x", &q).message(), "negotiation message has trailing bytes");
  std::string wrong_version = bytes;
  wrong_version[1] = 9;
  EXPECT_EQ(decode_requests(wrong_version, &q).message(),
            "negotiation message has format version 9, this kolo speaks 2: are all ranks running the same kolo build?");
  std::vector<Response> r;
  EXPECT_EQ(decode_responses(bytes, &r).message(), "negotiation message has the wrong tag");

  Request bad = sample_request();
  bad.shape = {-1};
  EXPECT_EQ(decode_requests(encode_requests({bad}), &q).message(), "malformed request #0 in negotiation message");
  bad.shape = {int64_t{1} << 40, int64_t{1} << 40};  // element count overflows
  EXPECT_FALSE(decode_requests(encode_requests({bad}), &q).ok());
  bad = sample_request();
  bad.dtype = static_cast<DataType>(kNumDataTypes);
  EXPECT_FALSE(decode_requests(encode_requests({bad}), &q).ok());
  bad = sample_request();
  bad.prescale = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(decode_requests(encode_requests({bad}), &q).ok());
  bad = sample_request();
  bad.compression = static_cast<Compression>(3);
  EXPECT_FALSE(decode_requests(encode_requests({bad}), &q).ok());
}

TEST(Wire, CountLargerThanMessageIsRejectedBeforeAllocating) {
  std::string bytes = encode_requests({});
  bytes[2] = bytes[3] = bytes[4] = bytes[5] = static_cast<char>(0xff);  // 4 billion requests claimed
  std::vector<Request> q;
  EXPECT_EQ(decode_requests(bytes, &q).message(), "negotiation message claims more items than it holds");
}

}  // namespace
}  // namespace kolo
