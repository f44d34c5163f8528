// Small allreduces that ride on the negotiation. A cycle's one collective (the bit-vector AND,
// Controller) also carries a fixed-size rider: each rank puts in the input of its first ready small
// allreduce of a cached name. Where every rank put in the same op, that collective has reduced it: the
// op is done with one collective instead of two (negotiation, then the allreduce), which is most of a
// scalar's cost (a loss, a metric, a norm). Where the ranks differ, the rider is dropped and the op
// runs the usual way; every rank sees the same rider, so all decide alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/message.h"
#include "engine/tensor_entry.h"

namespace kolo {

// Whether `response` (a cached one) may ride in a rider of `data_bytes`: a CPU allreduce of float32,
// float64, int32 or int64, Sum, Average, Min, Max or Product, uncompressed, every rank contributing.
bool can_ride(const Response& response, size_t data_bytes);
// Whether `request`'s op may ride once its response is cached (as can_ride; `data_bytes` 0: no rider).
bool may_ride(const Request& request, size_t data_bytes);

// The rider's size for `data_bytes` of data.
size_t rider_bytes(size_t data_bytes);
// A rider carrying nothing.
std::string empty_rider(size_t data_bytes);
// Makes `*rider` (of rider_bytes) carry nothing again, in place: a cycle reuses one rider.
void clear_rider(std::string* rider);
// Makes `*rider` (of rider_bytes) carry `entry`'s input, prescaled, for the op cached at `position`.
void load_rider(uint32_t position, const Response& response, const TensorEntry& entry, std::string* rider);
// The same for an op with no entry (an express op, Engine::express): `input` is its data.
void load_rider(uint32_t position, const Response& response, const void* input, std::string* rider);
// Combines `from` into `into` (riders of `bytes`, the same size): the reduction of one collective step.
void combine_riders(const void* from, void* into, size_t bytes);
// After the collective: whether every rank's rider carried the op at `*position`; its reduced data.
bool rider_result(const std::string& rider, uint32_t* position, const char** data);

}  // namespace kolo
