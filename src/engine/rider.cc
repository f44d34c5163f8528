#include "engine/rider.h"

#include <algorithm>
#include <cstring>

#include "cpu/kernels.h"
#include "kolo/tensor.h"

namespace kolo {
namespace {

struct Header {
  int32_t position;  // kEmpty, kMixed, or the cache position of the op carried
  int32_t count;
  uint8_t dtype;
  uint8_t op;
  uint8_t pad[6];
};
static_assert(sizeof(Header) == 16, "the rider's header is 16 bytes on every rank");

constexpr int32_t kEmpty = -1;  // this rank carries nothing
constexpr int32_t kMixed = -2;  // ranks carried different ops, or some none

Header header_of(const void* rider) {
  Header h;
  std::memcpy(&h, rider, sizeof h);
  return h;
}

// inout[i] = op(in[i], inout[i]); elements copied in and out (the rider's bytes carry no alignment).
template <typename T>
void reduce(ReduceOp op, const char* in, char* inout, int32_t count) {
  for (int32_t i = 0; i < count; ++i) {
    T a, b;
    std::memcpy(&a, in + i * sizeof(T), sizeof(T));
    std::memcpy(&b, inout + i * sizeof(T), sizeof(T));
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAverage: b = static_cast<T>(a + b); break;
      case ReduceOp::kMin: b = std::min(a, b); break;
      case ReduceOp::kMax: b = std::max(a, b); break;
      case ReduceOp::kProduct: b = static_cast<T>(a * b); break;
      case ReduceOp::kAdasum: break;  // never rides (can_ride)
    }
    std::memcpy(inout + i * sizeof(T), &b, sizeof(T));
  }
}

}  // namespace

namespace {
template <typename Op>
bool rideable(const Op& r, int64_t bytes, size_t data_bytes) {
  const bool dtype = r.dtype == DataType::kFloat32 || r.dtype == DataType::kFloat64 || r.dtype == DataType::kInt32 ||
                     r.dtype == DataType::kInt64;
  const bool op = r.reduce_op != ReduceOp::kAdasum;
  return r.kind == OpKind::kAllreduce && r.device == DeviceType::kCPU && dtype && op &&
         r.compression == Compression::kNone && bytes <= static_cast<int64_t>(data_bytes);
}
}  // namespace

bool can_ride(const Response& r, size_t data_bytes) {
  return r.ok() && r.contributors == 0 && rideable(r, r.size_bytes(), data_bytes);
}

bool may_ride(const Request& q, size_t data_bytes) {
  return data_bytes > 0 &&
         rideable(q, num_elements(q.shape) * static_cast<int64_t>(dtype_size(q.dtype)), data_bytes);
}

size_t rider_bytes(size_t data_bytes) { return sizeof(Header) + data_bytes; }

std::string empty_rider(size_t data_bytes) {
  std::string rider(rider_bytes(data_bytes), '\0');
  clear_rider(&rider);
  return rider;
}

void clear_rider(std::string* rider) {
  // Every rank sends the whole rider: what follows the header is zeroed, never stale data.
  std::memset(&(*rider)[0], 0, rider->size());
  Header h{};
  h.position = kEmpty;
  std::memcpy(&(*rider)[0], &h, sizeof h);
}

void load_rider(uint32_t position, const Response& r, const TensorEntry& entry, std::string* rider) {
  load_rider(position, r, entry.input.data, rider);
}

void load_rider(uint32_t position, const Response& r, const void* input, std::string* rider) {
  clear_rider(rider);
  Header h{};
  h.position = static_cast<int32_t>(position);
  h.count = static_cast<int32_t>(r.num_elements());
  h.dtype = static_cast<uint8_t>(r.dtype);
  h.op = static_cast<uint8_t>(r.reduce_op);
  std::memcpy(&(*rider)[0], &h, sizeof h);
  // The CPU path's prescaling, into the rider instead of the fusion buffer.
  scale_into(r.dtype, input, &(*rider)[sizeof h], h.count, Scaling{r.prescale, 1});
}

void combine_riders(const void* from, void* into, size_t bytes) {
  const Header a = header_of(from);
  Header b = header_of(into);
  if (a.position < 0 || a.position != b.position || a.count != b.count || a.dtype != b.dtype || a.op != b.op ||
      sizeof(Header) + static_cast<size_t>(a.count) * dtype_size(static_cast<DataType>(a.dtype)) > bytes) {
    if (b.position != kMixed) {
      b.position = kMixed;
      std::memcpy(into, &b, sizeof b);
    }
    return;
  }
  const char* in = static_cast<const char*>(from) + sizeof(Header);
  char* inout = static_cast<char*>(into) + sizeof(Header);
  const ReduceOp op = static_cast<ReduceOp>(a.op);
  switch (static_cast<DataType>(a.dtype)) {
    case DataType::kFloat32: reduce<float>(op, in, inout, a.count); break;
    case DataType::kFloat64: reduce<double>(op, in, inout, a.count); break;
    case DataType::kInt32: reduce<int32_t>(op, in, inout, a.count); break;
    case DataType::kInt64: reduce<int64_t>(op, in, inout, a.count); break;
    default: break;
  }
}

bool rider_result(const std::string& rider, uint32_t* position, const char** data) {
  const Header h = header_of(rider.data());
  if (h.position < 0) return false;
  *position = static_cast<uint32_t>(h.position);
  *data = rider.data() + sizeof(Header);
  return true;
}

}  // namespace kolo
