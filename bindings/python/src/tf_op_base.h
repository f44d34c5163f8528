// What kolo.tensorflow's kernels share (tf_reduce_ops.cc, tf_gather_ops.cc, tf_broadcast_op.cc,
// tf_sync_ops.cc; kolo.tensorflow loads them as kolo_tf_ops.so with tf.load_op_library).
// The kernels are asynchronous: they hand TensorFlow's buffers to kolo through the C ABI and call
// TensorFlow's done when the op ends (tf_completion.h), so no TensorFlow thread blocks on other ranks.
// They run eagerly and inside tf.function; shape functions let graphs trace. Every op is stateful:
// TensorFlow must neither fold two of them into one nor drop one whose result is unused, as every rank
// must submit it.
// The same kernels are registered for GPUs: a GPU tensor goes to kolo's GPU path as a CUDA tensor on
// TensorFlow's stream for the op (kolo's work starts after what that stream has queued), and done is
// called once kolo's work on the GPU has ended, as Horovod's kernels do. Splits and ranks stay in host
// memory (HostMemory).
#ifndef KOLO_TF_OP_BASE_H_
#define KOLO_TF_OP_BASE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kolo/c_api.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tf_completion.h"

#define KOLO_TF_TYPE_SET "{uint8, int8, uint16, int16, int32, int64, half, bfloat16, float, double, bool}"
#define KOLO_TF_TYPES "T: " KOLO_TF_TYPE_SET

// Registers `kernel` for op `name` on CPUs and on GPUs (kolo's GPU path on TensorFlow's stream), for
// ops with no input or output that must stay in host memory.
#define KOLO_TF_KERNEL_CPU_GPU(name, kernel)                                  \
  REGISTER_KERNEL_BUILDER(Name(name).Device(tensorflow::DEVICE_CPU), kernel); \
  REGISTER_KERNEL_BUILDER(Name(name).Device(tensorflow::DEVICE_GPU), kernel)

namespace kolo_tf {

// kolo's status as TensorFlow's, message prefixed "kolo: " (kolo.tensorflow maps it back).
absl::Status tf_status(int32_t code, const std::string& message);

// Where a kernel's tensors live: the host, or a GPU with TensorFlow's stream for the op.
struct Place {
  int32_t device_type = KOLO_CPU;
  int32_t ordinal = 0;
  void* stream = nullptr;
};

Place place_of(tensorflow::OpKernelContext* ctx, bool gpu);

// A TensorFlow tensor as kolo's descriptor; the shape lives as long as this object.
struct View {
  View(const tensorflow::Tensor& t, const Place& p);
  std::vector<int64_t> shape;
  kolo_tensor c;
};

// The C ABI's options for an op named `name` (which must outlive them) in process set `set`, with
// submit()'s callback; the rest at their defaults.
kolo_op_options op_options(const std::string& name, int set, kolo_done_fn fn, void* data);

// allgather, alltoall and reducescatter work on rows: a scalar is refused, naming the tensor.
absl::Status need_rows(const tensorflow::Tensor& t, const char* kind, const std::string& name, const char* what);

// The base of every kernel but join and barrier: the attributes they share, and finishing TensorFlow's side.
class KoloOp : public tensorflow::AsyncOpKernel {
 public:
  explicit KoloOp(tensorflow::OpKernelConstruction* c)
      : AsyncOpKernel(c), gpu_(c->device_type() == tensorflow::DEVICE_GPU) {
    OP_REQUIRES_OK(c, c->GetAttr("tensor_name", &name_));
    OP_REQUIRES_OK(c, c->GetAttr("process_set_id", &process_set_));
  }

 protected:
  Place place(tensorflow::OpKernelContext* ctx) const { return place_of(ctx, gpu_); }

  // Runs `then` (may be empty) on success, sets the status otherwise, then calls done.
  static Finish finisher(tensorflow::OpKernelContext* ctx, DoneCallback done,
                         std::function<absl::Status(kolo_output*)> then = nullptr) {
    return [ctx, done, then](int32_t code, const std::string& message, kolo_output* out) {
      absl::Status s = tf_status(code, message);
      if (s.ok() && then) s = then(out);
      if (!s.ok()) ctx->SetStatus(s);
      done();
    };
  }

  // The C ABI's options for the kernel's op: its name and set, and submit()'s callback.
  kolo_op_options options(kolo_done_fn fn, void* data) const { return op_options(name_, process_set_, fn, data); }

  // For ops whose output is shaped as their input, in place where TensorFlow lets the input's buffer
  // go (a gradient just computed, usually): submits `enqueue(input, output, done_fn, done_data, handle)`.
  template <typename Enqueue>
  void submit_same_shape(tensorflow::OpKernelContext* ctx, DoneCallback done, Enqueue enqueue) {
    const tensorflow::Tensor& in = ctx->input(0);
    tensorflow::Tensor* out = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->forward_input_or_allocate_output({0}, 0, in.shape(), &out), done);
    const Place at = place(ctx);
    View i(in, at), o(*out, at);
    submit([&](kolo_done_fn fn, void* data, kolo_handle* h) { return enqueue(&i.c, &o.c, fn, data, h); },
           finisher(ctx, done));
  }

  std::string name_;
  int process_set_ = 0;
  bool gpu_ = false;
};

// Shape functions: the output is shaped as the input.
absl::Status same_shape(tensorflow::shape_inference::InferenceContext* c);
// Every rank's rows: the first dimension is known only when it runs.
absl::Status rows_unknown(tensorflow::shape_inference::InferenceContext* c);

}  // namespace kolo_tf

#endif  // KOLO_TF_OP_BASE_H_
