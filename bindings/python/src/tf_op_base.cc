// The helpers kolo.tensorflow's kernels share (tf_op_base.h): dtypes, statuses, places, shapes.
#include "tf_op_base.h"

#include "xla/stream_executor/stream.h"

namespace kolo_tf {
namespace {

using tensorflow::DataType;

int32_t kolo_dtype(DataType t) {
  switch (t) {
    case tensorflow::DT_UINT8: return KOLO_UINT8;
    case tensorflow::DT_INT8: return KOLO_INT8;
    case tensorflow::DT_UINT16: return KOLO_UINT16;
    case tensorflow::DT_INT16: return KOLO_INT16;
    case tensorflow::DT_INT32: return KOLO_INT32;
    case tensorflow::DT_INT64: return KOLO_INT64;
    case tensorflow::DT_HALF: return KOLO_FLOAT16;
    case tensorflow::DT_BFLOAT16: return KOLO_BFLOAT16;
    case tensorflow::DT_FLOAT: return KOLO_FLOAT32;
    case tensorflow::DT_DOUBLE: return KOLO_FLOAT64;
    case tensorflow::DT_BOOL: return KOLO_BOOL;
    default: return -1;  // the op's type constraint keeps these out
  }
}

}  // namespace

absl::Status tf_status(int32_t code, const std::string& message) {
  const std::string m = "kolo: " + message;
  switch (code) {
    case KOLO_OK: return absl::OkStatus();
    case KOLO_INVALID_ARGUMENT: return absl::InvalidArgumentError(m);
    case KOLO_MISMATCH: return absl::FailedPreconditionError(m);
    case KOLO_ABORTED: return absl::AbortedError(m);
    case KOLO_UNSUPPORTED: return absl::UnimplementedError(m);
    case KOLO_TIMEOUT: return absl::DeadlineExceededError(m);
    case KOLO_PEERS_FAILED: return absl::UnavailableError(m);
    case KOLO_NOT_INITIALIZED: return absl::FailedPreconditionError(m);
    default: return absl::InternalError(m);
  }
}

Place place_of(tensorflow::OpKernelContext* ctx, bool gpu) {
  Place p;
  if (!gpu) return p;
  p.device_type = KOLO_CUDA;
  const auto* info = ctx->device()->tensorflow_accelerator_device_info();
  p.ordinal = info != nullptr ? info->gpu_id : 0;
  const auto* dc = ctx->op_device_context();
  if (dc != nullptr && dc->stream() != nullptr) p.stream = dc->stream()->platform_specific_handle().stream;
  return p;
}

View::View(const tensorflow::Tensor& t, const Place& p) : shape(t.shape().dims()) {
  for (int d = 0; d < t.shape().dims(); ++d) shape[d] = t.shape().dim_size(d);
  c.data = const_cast<char*>(t.tensor_data().data());
  c.dtype = kolo_dtype(t.dtype());
  c.ndim = static_cast<int32_t>(shape.size());
  c.shape = shape.data();
  c.strides = nullptr;
  c.device_type = p.device_type;
  c.device_index = p.ordinal;
  c.stream = p.stream;
}

kolo_op_options op_options(const std::string& name, int set, kolo_done_fn fn, void* data) {
  kolo_op_options o;
  kolo_op_options_init(&o);
  o.name = name.c_str();
  o.process_set = set;
  o.done = fn;
  o.done_data = data;
  return o;
}

absl::Status need_rows(const tensorflow::Tensor& t, const char* kind, const std::string& name, const char* what) {
  if (t.dims() > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(std::string("kolo: ") + kind + " of tensor '" + name +
                                    "': needs at least one dimension (the rows it " + what + ")");
}

absl::Status same_shape(tensorflow::shape_inference::InferenceContext* c) {
  c->set_output(0, c->input(0));
  return absl::OkStatus();
}

absl::Status rows_unknown(tensorflow::shape_inference::InferenceContext* c) {
  tensorflow::shape_inference::ShapeHandle rest;
  TF_RETURN_IF_ERROR(c->WithRankAtLeast(c->input(0), 1, &rest));
  tensorflow::shape_inference::ShapeHandle out;
  TF_RETURN_IF_ERROR(c->ReplaceDim(c->input(0), 0, c->UnknownDim(), &out));
  c->set_output(0, out);
  return absl::OkStatus();
}

}  // namespace kolo_tf
