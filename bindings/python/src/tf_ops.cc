// kolo's collectives as TensorFlow ops (kolo.tensorflow loads them with tf.load_op_library): asynchronous
// kernels that hand TensorFlow's buffers to kolo through the C ABI and call TensorFlow's done when the
// op ends (tf_completion.h), so no TensorFlow thread blocks on other ranks. They run eagerly and inside
// tf.function; shape functions let graphs trace. Every op is stateful: TensorFlow must neither fold two
// of them into one nor drop one whose result is unused, as every rank must submit it.
// The same kernels are registered for GPUs: a GPU tensor goes to kolo's GPU path as a CUDA tensor on
// TensorFlow's stream for the op (kolo's work starts after what that stream has queued), and done is
// called once kolo's work on the GPU has ended, as Horovod's kernels do. Splits and ranks stay in host
// memory (HostMemory).
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kolo/c_api.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tf_completion.h"
#include "xla/stream_executor/stream.h"

namespace kolo_tf {
namespace {

using tensorflow::AsyncOpKernel;
using tensorflow::DataType;
using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;
using tensorflow::Tensor;
using tensorflow::TensorShape;
using tensorflow::shape_inference::InferenceContext;
using tensorflow::shape_inference::ShapeHandle;

#define KOLO_TF_TYPE_SET "{uint8, int8, uint16, int16, int32, int64, half, bfloat16, float, double, bool}"
#define KOLO_TF_TYPES "T: " KOLO_TF_TYPE_SET

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

// kolo's status as TensorFlow's, message prefixed "kolo: " (kolo.tensorflow maps it back).
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

// Where a kernel's tensors live: the host, or a GPU with TensorFlow's stream for the op.
struct Place {
  int32_t device_type = KOLO_CPU;
  int32_t ordinal = 0;
  void* stream = nullptr;
};

Place place_of(OpKernelContext* ctx, bool gpu) {
  Place p;
  if (!gpu) return p;
  p.device_type = KOLO_CUDA;
  const auto* info = ctx->device()->tensorflow_accelerator_device_info();
  p.ordinal = info != nullptr ? info->gpu_id : 0;
  const auto* dc = ctx->op_device_context();
  if (dc != nullptr && dc->stream() != nullptr) p.stream = dc->stream()->platform_specific_handle().stream;
  return p;
}

// A TensorFlow tensor as kolo's descriptor; the shape lives as long as this object.
struct View {
  View(const Tensor& t, const Place& p) : shape(t.shape().dims()) {
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
  std::vector<int64_t> shape;
  kolo_tensor c;
};

// allgather, alltoall and reducescatter work on rows: a scalar is refused, naming the tensor.
absl::Status need_rows(const Tensor& t, const char* kind, const std::string& name, const char* what) {
  if (t.dims() > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(std::string("kolo: ") + kind + " of tensor '" + name +
                                    "': needs at least one dimension (the rows it " + what + ")");
}

// The base of every kernel: the attributes they share, and finishing TensorFlow's side.
class KoloOp : public AsyncOpKernel {
 public:
  explicit KoloOp(OpKernelConstruction* c) : AsyncOpKernel(c), gpu_(c->device_type() == tensorflow::DEVICE_GPU) {
    OP_REQUIRES_OK(c, c->GetAttr("tensor_name", &name_));
    OP_REQUIRES_OK(c, c->GetAttr("process_set_id", &process_set_));
  }

 protected:
  Place place(OpKernelContext* ctx) const { return place_of(ctx, gpu_); }

  // Runs `then` (may be empty) on success, sets the status otherwise, then calls done.
  static Finish finisher(OpKernelContext* ctx, DoneCallback done,
                         std::function<absl::Status(kolo_output*)> then = nullptr) {
    return [ctx, done, then](int32_t code, const std::string& message, kolo_output* out) {
      absl::Status s = tf_status(code, message);
      if (s.ok() && then) s = then(out);
      if (!s.ok()) ctx->SetStatus(s);
      done();
    };
  }

  std::string name_;
  int process_set_ = 0;
  bool gpu_ = false;
};

// allreduce and reducescatter's attributes.
class ReducingOp : public KoloOp {
 public:
  explicit ReducingOp(OpKernelConstruction* c) : KoloOp(c) {
    OP_REQUIRES_OK(c, c->GetAttr("reduce_op", &op_));
    OP_REQUIRES_OK(c, c->GetAttr("prescale_factor", &prescale_));
    OP_REQUIRES_OK(c, c->GetAttr("postscale_factor", &postscale_));
  }

 protected:
  int op_ = KOLO_AVERAGE;
  float prescale_ = 1.0f, postscale_ = 1.0f;
};

class AllreduceOp : public ReducingOp {
 public:
  using ReducingOp::ReducingOp;
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    const Tensor& in = ctx->input(0);
    Tensor* out = nullptr;
    // In place where TensorFlow lets the input's buffer go (a gradient just computed, usually).
    OP_REQUIRES_OK_ASYNC(ctx, ctx->forward_input_or_allocate_output({0}, 0, in.shape(), &out), done);
    const Place at = place(ctx);
    View i(in, at), o(*out, at);
    submit([&](kolo_done_fn fn, void* data) {
      return kolo_allreduce_in_set_async(process_set_, name_.c_str(), &i.c, &o.c, op_, prescale_, postscale_,
                                         KOLO_COMPRESSION_NONE, fn, data);
    }, finisher(ctx, done));
  }
};

// Allreduces of several tensors in one kernel, as Horovod's grouped allreduce: every tensor reaches
// kolo at once (so they negotiate and fuse together, as kolo's C ABI row does) and TensorFlow sees one
// completion for the group instead of one per tensor. Tensor i is named "<tensor_name>.<i>".
class GroupedAllreduceOp : public ReducingOp {
 public:
  using ReducingOp::ReducingOp;
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    const int n = ctx->num_inputs();
    std::vector<Tensor*> outs(n, nullptr);
    // Every output before anything is enqueued: a failure here leaves nothing half submitted.
    for (int i = 0; i < n; ++i) {
      OP_REQUIRES_OK_ASYNC(ctx, ctx->forward_input_or_allocate_output({i}, i, ctx->input(i).shape(), &outs[i]),
                           done);
    }
    if (n == 0) {
      done();
      return;
    }
    const Place at = place(ctx);
    auto group = std::make_shared<Group>(n, ctx, std::move(done));
    for (int i = 0; i < n; ++i) {
      View in(ctx->input(i), at), out(*outs[i], at);
      const std::string name = name_ + "." + std::to_string(i);
      submit([&](kolo_done_fn fn, void* data) {
        return kolo_allreduce_in_set_async(process_set_, name.c_str(), &in.c, &out.c, op_, prescale_, postscale_,
                                           KOLO_COMPRESSION_NONE, fn, data);
      }, [group](int32_t code, const std::string& message, kolo_output*) { group->one_ended(code, message); });
    }
  }

 private:
  // Calls TensorFlow's done once every member has ended, with the first failure's status.
  class Group {
   public:
    Group(int members, OpKernelContext* ctx, DoneCallback done) : left_(members), ctx_(ctx), done_(std::move(done)) {}
    void one_ended(int32_t code, const std::string& message) {
      if (code != KOLO_OK) {
        std::lock_guard<std::mutex> lock(mu_);
        if (first_failure_.ok()) first_failure_ = tf_status(code, message);
      }
      if (left_.fetch_sub(1) != 1) return;
      if (!first_failure_.ok()) ctx_->SetStatus(first_failure_);  // every member has ended: no writer left
      done_();
    }

   private:
    std::atomic<int> left_;
    std::mutex mu_;
    absl::Status first_failure_;
    OpKernelContext* ctx_;
    DoneCallback done_;
  };
};

class BroadcastOp : public KoloOp {
 public:
  explicit BroadcastOp(OpKernelConstruction* c) : KoloOp(c) { OP_REQUIRES_OK(c, c->GetAttr("root_rank", &root_)); }
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    const Tensor& in = ctx->input(0);
    Tensor* out = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->forward_input_or_allocate_output({0}, 0, in.shape(), &out), done);
    const Place at = place(ctx);
    View i(in, at), o(*out, at);
    submit([&](kolo_done_fn fn, void* data) {
      return kolo_broadcast_in_set_async(process_set_, name_.c_str(), &i.c, &o.c, root_, fn, data);
    }, finisher(ctx, done));
  }

 private:
  int root_ = 0;
};

class ReducescatterOp : public ReducingOp {
 public:
  using ReducingOp::ReducingOp;
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    const Tensor& in = ctx->input(0);
    OP_REQUIRES_OK_ASYNC(ctx, need_rows(in, "reducescatter", name_, "scatters"), done);
    const int32_t set_rank = kolo_process_set_rank(process_set_), set_size = kolo_process_set_size(process_set_);
    OP_REQUIRES_ASYNC(ctx, set_rank >= 0 && set_size > 0,
                      absl::InvalidArgumentError("kolo: reducescatter of tensor '" + name_ + "': " +
                                                 (set_size > 0 ? std::string("this rank is not in process set ") +
                                                                     std::to_string(process_set_)
                                                               : std::string(kolo_last_error()))),
                      done);
    TensorShape shape = in.shape();
    shape.set_dim(0, kolo_reducescatter_rows(in.dim_size(0), set_rank, set_size));
    Tensor* out = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->allocate_output(0, shape, &out), done);
    const Place at = place(ctx);
    View i(in, at), o(*out, at);
    submit([&](kolo_done_fn fn, void* data) {
      return kolo_reducescatter_in_set_async(process_set_, name_.c_str(), &i.c, &o.c, op_, prescale_, postscale_, fn,
                                             data);
    }, finisher(ctx, done));
  }
};

// allgather and alltoall learn their output's shape from kolo, which asks for the memory (on its
// thread) once every rank's rows are known: TensorFlow allocates it there.
struct Allocation {
  OpKernelContext* ctx;
  absl::Status status;
};

void* allocate_output(void* data, int32_t ndim, const int64_t* dims) {
  auto* a = static_cast<Allocation*>(data);
  TensorShape shape;
  for (int32_t d = 0; d < ndim; ++d) shape.AddDim(dims[d]);
  Tensor* out = nullptr;
  a->status = a->ctx->allocate_output(0, shape, &out);
  if (!a->status.ok()) return nullptr;
  return shape.num_elements() == 0 ? nullptr : const_cast<char*>(out->tensor_data().data());
}

class AllgatherOp : public KoloOp {
 public:
  using KoloOp::KoloOp;
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    const Tensor& in = ctx->input(0);
    OP_REQUIRES_OK_ASYNC(ctx, need_rows(in, "allgather", name_, "concatenates"), done);
    View i(in, place(ctx));
    auto* a = new Allocation{ctx, absl::OkStatus()};
    submit([&](kolo_done_fn fn, void* data) {
      return kolo_allgather_in_set_async(process_set_, name_.c_str(), &i.c, allocate_output, a, fn, data);
    }, finisher(ctx, done, [a](kolo_output*) {
      absl::Status s = a->status;
      delete a;
      return s;
    }));
  }
};

class AlltoallOp : public KoloOp {
 public:
  using KoloOp::KoloOp;
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    const Tensor& in = ctx->input(0);
    const Tensor& splits = ctx->input(1);
    OP_REQUIRES_OK_ASYNC(ctx, need_rows(in, "alltoall", name_, "scatters"), done);
    std::vector<int64_t> s(static_cast<size_t>(splits.NumElements()));
    for (size_t k = 0; k < s.size(); ++k) {
      s[k] = splits.dtype() == tensorflow::DT_INT64 ? splits.flat<int64_t>()(k) : splits.flat<int32_t>()(k);
    }
    View i(in, place(ctx));
    auto* a = new Allocation{ctx, absl::OkStatus()};
    submit([&](kolo_done_fn fn, void* data) {
      return kolo_alltoall_in_set_async(process_set_, name_.c_str(), &i.c, s.empty() ? nullptr : s.data(),
                                        static_cast<int32_t>(s.size()), allocate_output, a, fn, data);
    }, finisher(ctx, done, [a, ctx](kolo_output* out) {
      absl::Status st = a->status;
      delete a;
      if (!st.ok()) return st;
      const int32_t n = kolo_output_num_received_splits(out);
      Tensor* received = nullptr;
      st = ctx->allocate_output(1, TensorShape({n}), &received);
      if (!st.ok()) return st;
      for (int32_t k = 0; k < n; ++k) received->flat<int32_t>()(k) = static_cast<int32_t>(kolo_output_received_splits(out)[k]);
      return absl::OkStatus();
    }));
  }
};

class JoinOp : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    submit([](kolo_done_fn fn, void* data) { return kolo_join_async(fn, data); },
           [ctx, done](int32_t code, const std::string& message, kolo_output* out) {
             absl::Status s = tf_status(code, message);
             Tensor* last = nullptr;
             if (s.ok()) s = ctx->allocate_output(0, TensorShape({}), &last);
             if (s.ok()) last->scalar<int32_t>()() = kolo_output_last_joined_rank(out);
             if (!s.ok()) ctx->SetStatus(s);
             done();
           });
  }
};

class BarrierOp : public AsyncOpKernel {
 public:
  explicit BarrierOp(OpKernelConstruction* c) : AsyncOpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("process_set_id", &process_set_));
  }
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    const int set = process_set_;
    submit([set](kolo_done_fn fn, void* data) { return kolo_barrier_in_set_async(set, fn, data); },
           [ctx, done](int32_t code, const std::string& message, kolo_output*) {
             absl::Status s = tf_status(code, message);
             if (!s.ok()) ctx->SetStatus(s);
             done();
           });
  }

 private:
  int process_set_ = 0;
};

absl::Status same_shape(InferenceContext* c) {
  c->set_output(0, c->input(0));
  return absl::OkStatus();
}

// Every rank's rows: the first dimension is known only when it runs.
absl::Status rows_unknown(InferenceContext* c) {
  ShapeHandle rest;
  TF_RETURN_IF_ERROR(c->WithRankAtLeast(c->input(0), 1, &rest));
  ShapeHandle out;
  TF_RETURN_IF_ERROR(c->ReplaceDim(c->input(0), 0, c->UnknownDim(), &out));
  c->set_output(0, out);
  return absl::OkStatus();
}

}  // namespace
}  // namespace kolo_tf

REGISTER_OP("KoloAllreduce")
    .Attr(KOLO_TF_TYPES)
    .Attr("tensor_name: string")
    .Attr("reduce_op: int")
    .Attr("prescale_factor: float = 1.0")
    .Attr("postscale_factor: float = 1.0")
    .Attr("process_set_id: int = 0")
    .Input("tensor: T")
    .Output("output: T")
    .SetIsStateful()
    .SetShapeFn(kolo_tf::same_shape);

REGISTER_OP("KoloGroupedAllreduce")
    .Attr("T: list(" KOLO_TF_TYPE_SET ") >= 0")
    .Attr("tensor_name: string")
    .Attr("reduce_op: int")
    .Attr("prescale_factor: float = 1.0")
    .Attr("postscale_factor: float = 1.0")
    .Attr("process_set_id: int = 0")
    .Input("tensors: T")
    .Output("outputs: T")
    .SetIsStateful()
    .SetShapeFn([](tensorflow::shape_inference::InferenceContext* c) {
      for (int i = 0; i < c->num_inputs(); ++i) c->set_output(i, c->input(i));
      return absl::OkStatus();
    });

REGISTER_OP("KoloBroadcast")
    .Attr(KOLO_TF_TYPES)
    .Attr("tensor_name: string")
    .Attr("root_rank: int")
    .Attr("process_set_id: int = 0")
    .Input("tensor: T")
    .Output("output: T")
    .SetIsStateful()
    .SetShapeFn(kolo_tf::same_shape);

REGISTER_OP("KoloAllgather")
    .Attr(KOLO_TF_TYPES)
    .Attr("tensor_name: string")
    .Attr("process_set_id: int = 0")
    .Input("tensor: T")
    .Output("output: T")
    .SetIsStateful()
    .SetShapeFn(kolo_tf::rows_unknown);

REGISTER_OP("KoloReducescatter")
    .Attr(KOLO_TF_TYPES)
    .Attr("tensor_name: string")
    .Attr("reduce_op: int")
    .Attr("prescale_factor: float = 1.0")
    .Attr("postscale_factor: float = 1.0")
    .Attr("process_set_id: int = 0")
    .Input("tensor: T")
    .Output("output: T")
    .SetIsStateful()
    .SetShapeFn(kolo_tf::rows_unknown);

REGISTER_OP("KoloAlltoall")
    .Attr(KOLO_TF_TYPES)
    .Attr("Tsplits: {int32, int64} = DT_INT32")
    .Attr("tensor_name: string")
    .Attr("process_set_id: int = 0")
    .Input("tensor: T")
    .Input("splits: Tsplits")
    .Output("output: T")
    .Output("received_splits: int32")
    .SetIsStateful()
    .SetShapeFn([](tensorflow::shape_inference::InferenceContext* c) {
      TF_RETURN_IF_ERROR(kolo_tf::rows_unknown(c));
      c->set_output(1, c->Vector(c->UnknownDim()));
      return absl::OkStatus();
    });

REGISTER_OP("KoloJoin").Output("last_joined_rank: int32").SetIsStateful().SetShapeFn(
    [](tensorflow::shape_inference::InferenceContext* c) {
      c->set_output(0, c->Scalar());
      return absl::OkStatus();
    });

REGISTER_OP("KoloBarrier").Attr("process_set_id: int = 0").SetIsStateful().SetShapeFn(
    [](tensorflow::shape_inference::InferenceContext*) { return absl::OkStatus(); });

REGISTER_KERNEL_BUILDER(Name("KoloAllreduce").Device(tensorflow::DEVICE_CPU), kolo_tf::AllreduceOp);
REGISTER_KERNEL_BUILDER(Name("KoloGroupedAllreduce").Device(tensorflow::DEVICE_CPU), kolo_tf::GroupedAllreduceOp);
REGISTER_KERNEL_BUILDER(Name("KoloBroadcast").Device(tensorflow::DEVICE_CPU), kolo_tf::BroadcastOp);
REGISTER_KERNEL_BUILDER(Name("KoloAllgather").Device(tensorflow::DEVICE_CPU), kolo_tf::AllgatherOp);
REGISTER_KERNEL_BUILDER(Name("KoloReducescatter").Device(tensorflow::DEVICE_CPU), kolo_tf::ReducescatterOp);
REGISTER_KERNEL_BUILDER(Name("KoloAlltoall").Device(tensorflow::DEVICE_CPU), kolo_tf::AlltoallOp);
REGISTER_KERNEL_BUILDER(Name("KoloJoin").Device(tensorflow::DEVICE_CPU), kolo_tf::JoinOp);
REGISTER_KERNEL_BUILDER(Name("KoloBarrier").Device(tensorflow::DEVICE_CPU), kolo_tf::BarrierOp);

// GPU tensors: kolo's GPU path on TensorFlow's stream; what the host reads stays in host memory.
REGISTER_KERNEL_BUILDER(Name("KoloAllreduce").Device(tensorflow::DEVICE_GPU), kolo_tf::AllreduceOp);
REGISTER_KERNEL_BUILDER(Name("KoloGroupedAllreduce").Device(tensorflow::DEVICE_GPU), kolo_tf::GroupedAllreduceOp);
REGISTER_KERNEL_BUILDER(Name("KoloBroadcast").Device(tensorflow::DEVICE_GPU), kolo_tf::BroadcastOp);
REGISTER_KERNEL_BUILDER(Name("KoloAllgather").Device(tensorflow::DEVICE_GPU), kolo_tf::AllgatherOp);
REGISTER_KERNEL_BUILDER(Name("KoloReducescatter").Device(tensorflow::DEVICE_GPU), kolo_tf::ReducescatterOp);
REGISTER_KERNEL_BUILDER(
    Name("KoloAlltoall").Device(tensorflow::DEVICE_GPU).HostMemory("splits").HostMemory("received_splits"),
    kolo_tf::AlltoallOp);
REGISTER_KERNEL_BUILDER(Name("KoloJoin").Device(tensorflow::DEVICE_GPU).HostMemory("last_joined_rank"),
                        kolo_tf::JoinOp);
REGISTER_KERNEL_BUILDER(Name("KoloBarrier").Device(tensorflow::DEVICE_GPU), kolo_tf::BarrierOp);
