#include "comm/host/combine_bytes.h"

#include "cpu/reduce.h"

namespace kolo {

CombineBytes combine_for(DataType dtype, ReduceOp op) {
  const size_t elem = dtype_size(dtype);
  return [dtype, op, elem](const char* from, char* into, size_t bytes) {
    reduce_into(dtype, op, from, into, static_cast<int64_t>(bytes / elem));
  };
}

}  // namespace kolo
