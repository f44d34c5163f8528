#include "kolo/status.h"

namespace kolo {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kNotInitialized: return "NOT_INITIALIZED";
    case StatusCode::kMismatch: return "MISMATCH";
    case StatusCode::kAborted: return "ABORTED";
    case StatusCode::kInternal: return "INTERNAL";
    case StatusCode::kUnsupported: return "UNSUPPORTED";
    case StatusCode::kTimeout: return "TIMEOUT";
    case StatusCode::kPeersFailed: return "PEERS_FAILED";
    case StatusCode::kUnknownHandle: return "UNKNOWN_HANDLE";
  }
  return "UNKNOWN";
}

std::string Status::to_string() const {
  if (ok()) return "OK";
  return std::string(status_code_name(code_)) + ": " + message_;
}

}  // namespace kolo
