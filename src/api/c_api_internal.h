// What the C ABI's files (c_api.cc, c_api_ops.cc) share: the calling thread's last error and handing an
// op's Output over to C.
#pragma once

#include <cstdint>

#include "kolo/c_api.h"
#include "kolo/kolo.h"

struct kolo_output {
  kolo::Output output;
};

namespace kolo_c {

// s's code; when it is not OK, its message becomes kolo_last_error()'s.
int32_t report(const kolo::Status& s);

// report(s), and *output (when not null) receives the op's output, or null when it produced nothing
// beyond its status.
int32_t hand_over(const kolo::Status& s, kolo::Output out, kolo_output** output);

}  // namespace kolo_c
