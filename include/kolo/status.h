// Outcome of a kolo call or of an asynchronous operation.
#pragma once

#include <string>
#include <utility>

#include "kolo/export.h"

namespace kolo {

// Values are part of the C ABI (c_api.h mirrors them): append, never renumber.
enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,   // the call itself is wrong: nothing was enqueued
  kNotInitialized = 2,    // before init() or after shutdown()
  kMismatch = 3,          // ranks disagree about an operation of one name
  kAborted = 4,           // the job was shut down, or stalled past its limit
  kInternal = 5,          // MPI, NCCL or CUDA reported an error
  kUnsupported = 6,       // valid, but not available in this build or machine
  kTimeout = 7,           // a bounded wait ran out; the operation may still finish
  kPeersFailed = 8,       // a peer was lost and this MPI (ULFM) lets the survivors go on: roll back, recover
  kUnknownHandle = 9,     // wait/poll on a handle never issued, or already waited on
};

class KOLO_EXPORT Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status NotInitialized(std::string m) { return {StatusCode::kNotInitialized, std::move(m)}; }
  static Status Mismatch(std::string m) { return {StatusCode::kMismatch, std::move(m)}; }
  static Status Aborted(std::string m) { return {StatusCode::kAborted, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
  static Status Unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
  static Status Timeout(std::string m) { return {StatusCode::kTimeout, std::move(m)}; }
  static Status PeersFailed(std::string m) { return {StatusCode::kPeersFailed, std::move(m)}; }
  static Status UnknownHandle(std::string m) { return {StatusCode::kUnknownHandle, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "OK", or the code's name and the message: for logs and exceptions.
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

KOLO_EXPORT const char* status_code_name(StatusCode code);

}  // namespace kolo
