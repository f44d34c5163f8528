// Writes the fuzzer's seed corpus: real negotiation messages, as ranks send them for ResNet-50's
// gradients, allgathers, broadcasts, joins, and the responses (agreements and mismatch errors).
//   make_wire_corpus DIR
#include <fstream>
#include <string>

#include "engine/response_builder.h"
#include "engine/wire.h"

using namespace kolo;

namespace {

void write(const std::string& dir, const std::string& name, const std::string& bytes) {
  std::ofstream(dir + "/" + name, std::ios::binary) << bytes;
}

Request request(const std::string& name, OpKind kind, std::vector<int64_t> shape, int rank) {
  Request q;
  q.name = name;
  q.kind = kind;
  q.rank = rank;
  q.dtype = DataType::kFloat32;
  q.reduce_op = ReduceOp::kAverage;
  q.shape = std::move(shape);
  return q;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::string dir = argv[1];
  std::vector<Request> grads = {request("grad.conv1.weight", OpKind::kAllreduce, {64, 3, 7, 7}, 1),
                                request("grad.bn1.weight", OpKind::kAllreduce, {64}, 1),
                                request("grad.layer4.2.conv3.weight", OpKind::kAllreduce, {2048, 512, 1, 1}, 1),
                                request("grad.fc.bias", OpKind::kAllreduce, {1000}, 1)};
  grads[1].prescale = 0.5;
  grads[2].waited_seconds = 1.5;
  write(dir, "requests_gradients", encode_requests(grads));
  write(dir, "requests_empty", encode_requests({}));
  Request gather = request("gather.labels", OpKind::kAllgather, {7, 3}, 2);
  gather.dtype = DataType::kInt64;
  Request bcast = request("broadcast_parameters.fc.weight", OpKind::kBroadcast, {1000, 2048}, 0);
  bcast.root = 3;
  Request join = request("join", OpKind::kJoin, {}, 3);
  write(dir, "requests_mixed", encode_requests({gather, bcast, join, request("barrier", OpKind::kBarrier, {}, 0)}));

  std::vector<Response> responses;
  responses.push_back(build_response({request("grad.fc.weight", OpKind::kAllreduce, {1000, 2048}, 0),
                                      request("grad.fc.weight", OpKind::kAllreduce, {1000, 2048}, 1)}));
  responses.push_back(build_response({request("g", OpKind::kAllgather, {2, 3}, 0), request("g", OpKind::kAllgather, {5, 3}, 1)}));
  responses.push_back(build_response({request("w", OpKind::kAllreduce, {4}, 0), request("w", OpKind::kAllreduce, {5}, 1)}));
  responses.push_back(build_response({request("a", OpKind::kAllreduce, {8}, 0)}, {1}));
  write(dir, "responses_mixed", encode_responses(responses));
  write(dir, "responses_empty", encode_responses({}));
  return 0;
}
