// Every rank's rows into one buffer through a device communicator, shared by the two allgathers.
#pragma once

#include <vector>

#include "comm/device/device.h"

namespace kolo {

// Member r's bytes[r] bytes land at `out` after those of members 0..r-1; `in` is this member's.
// One allgather when every member gives as many bytes, else one broadcast from each, launched
// together. Bytes throughout, so any dtype goes.
Status gather_rows(DeviceComm& comm, const void* in, char* out, const std::vector<int64_t>& bytes,
                   DeviceStream stream);

}  // namespace kolo
