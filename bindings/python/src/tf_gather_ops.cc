// kolo.tensorflow's gathering ops, KoloAllgather and KoloAlltoall: their output's shape is known only
// once every rank's rows are.
#include <cstddef>
#include <string>
#include <vector>

#include "tf_op_base.h"

namespace kolo_tf {
namespace {

using tensorflow::OpKernelContext;
using tensorflow::Tensor;
using tensorflow::TensorShape;

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
    submit([&](kolo_done_fn fn, void* data, kolo_handle* h) {
      kolo_op_options opts = options(fn, data);
      opts.allocate = allocate_output;
      opts.allocate_data = a;
      return kolo_allgather(&i.c, &opts, h);
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
    submit([&](kolo_done_fn fn, void* data, kolo_handle* h) {
      kolo_op_options opts = options(fn, data);
      opts.splits = s.empty() ? nullptr : s.data();
      opts.num_splits = static_cast<int32_t>(s.size());
      opts.allocate = allocate_output;
      opts.allocate_data = a;
      return kolo_alltoall(&i.c, &opts, h);
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

}  // namespace
}  // namespace kolo_tf

REGISTER_OP("KoloAllgather")
    .Attr(KOLO_TF_TYPES)
    .Attr("tensor_name: string")
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

KOLO_TF_KERNEL_CPU_GPU("KoloAllgather", kolo_tf::AllgatherOp);
REGISTER_KERNEL_BUILDER(Name("KoloAlltoall").Device(tensorflow::DEVICE_CPU), kolo_tf::AlltoallOp);
// On GPUs the splits stay in host memory.
REGISTER_KERNEL_BUILDER(
    Name("KoloAlltoall").Device(tensorflow::DEVICE_GPU).HostMemory("splits").HostMemory("received_splits"),
    kolo_tf::AlltoallOp);
