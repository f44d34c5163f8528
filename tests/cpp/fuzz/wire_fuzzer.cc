// libFuzzer target: the decoder of the messages ranks exchange while negotiating. Malformed bytes
// must be rejected with an error, never crash or read past the input (ASan watches); and whatever
// decodes must encode back to exactly the same bytes.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A copy the exact size of the input, so that ASan catches any read past its end.
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  std::vector<kolo::Request> requests;
  if (kolo::decode_requests(bytes, &requests).ok() && kolo::encode_requests(requests) != bytes) std::abort();
  std::vector<kolo::Response> responses;
  if (kolo::decode_responses(bytes, &responses).ok() && kolo::encode_responses(responses) != bytes) std::abort();
  return 0;
}
