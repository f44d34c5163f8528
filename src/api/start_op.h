// How the C ABI starts an op: a call refused at once comes back as its status, not as a failed handle.
#pragma once

#include "common/function_ref.h"
#include "kolo/kolo.h"

namespace kolo {

// Runs `start` (one of the *_async calls, with no other op started inside it). Refused at once (a bad
// argument, kolo not initialized, an unknown set, a name in flight): returns why, nothing enqueued and
// no handle made. Else, not blocking: OK and *handle; blocking: as the blocking forms (the caller drives
// its op's cycles, KOLO_CALLER_DRIVES), the op's status and *output (may be null).
Status start_op(FunctionRef<Handle()> start, bool blocking, Handle* handle, Output* output);

}  // namespace kolo
