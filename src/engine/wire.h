// The bytes ranks exchange while negotiating. Decoding treats its input as untrusted: any malformed
// message is rejected with an error, never read past its end (tests/cpp/fuzz exercises this).
#pragma once

#include <string>
#include <vector>

#include "engine/message.h"
#include "kolo/status.h"

namespace kolo {

std::string encode_requests(const std::vector<Request>& requests);
Status decode_requests(const std::string& bytes, std::vector<Request>* requests);

std::string encode_responses(const std::vector<Response>& responses);
Status decode_responses(const std::string& bytes, std::vector<Response>* responses);

}  // namespace kolo
