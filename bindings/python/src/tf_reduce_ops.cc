// kolo.tensorflow's reducing ops: KoloAllreduce, KoloGroupedAllreduce and KoloReducescatter.
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tf_op_base.h"

namespace kolo_tf {
namespace {

using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;
using tensorflow::Tensor;
using tensorflow::TensorShape;

// allreduce and reducescatter's attributes.
class ReducingOp : public KoloOp {
 public:
  explicit ReducingOp(OpKernelConstruction* c) : KoloOp(c) {
    OP_REQUIRES_OK(c, c->GetAttr("reduce_op", &op_));
    OP_REQUIRES_OK(c, c->GetAttr("prescale_factor", &prescale_));
    OP_REQUIRES_OK(c, c->GetAttr("postscale_factor", &postscale_));
  }

 protected:
  // The options of an op named `name` (which must outlive them): the kernel's op and factors.
  kolo_op_options reduce_options(const std::string& name, kolo_done_fn fn, void* data) const {
    kolo_op_options o = op_options(name, process_set_, fn, data);
    o.reduce_op = op_;
    o.prescale_factor = prescale_;
    o.postscale_factor = postscale_;
    return o;
  }

  int op_ = KOLO_AVERAGE;
  float prescale_ = 1.0f, postscale_ = 1.0f;
};

class AllreduceOp : public ReducingOp {
 public:
  using ReducingOp::ReducingOp;
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    submit_same_shape(ctx, done, [&](const kolo_tensor* i, const kolo_tensor* o, kolo_done_fn fn, void* data,
                                     kolo_handle* h) {
      const kolo_op_options opts = reduce_options(name_, fn, data);
      return kolo_allreduce(i, o, &opts, h);
    });
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
      submit([&](kolo_done_fn fn, void* data, kolo_handle* h) {
        const kolo_op_options opts = reduce_options(name, fn, data);
        return kolo_allreduce(&in.c, &out.c, &opts, h);
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
    submit([&](kolo_done_fn fn, void* data, kolo_handle* h) {
      const kolo_op_options opts = reduce_options(name_, fn, data);
      return kolo_reducescatter(&i.c, &o.c, &opts, h);
    }, finisher(ctx, done));
  }
};

}  // namespace
}  // namespace kolo_tf

// KoloAllreduce and KoloReducescatter: one tensor, reduced and scaled; they differ in the output's shape.
#define KOLO_TF_REDUCING_OP(name)                \
  REGISTER_OP(name)                               \
      .Attr(KOLO_TF_TYPES)                        \
      .Attr("tensor_name: string")                \
      .Attr("reduce_op: int")                     \
      .Attr("prescale_factor: float = 1.0")       \
      .Attr("postscale_factor: float = 1.0")      \
      .Attr("process_set_id: int = 0")            \
      .Input("tensor: T")                         \
      .Output("output: T")                        \
      .SetIsStateful()

KOLO_TF_REDUCING_OP("KoloAllreduce").SetShapeFn(kolo_tf::same_shape);
KOLO_TF_REDUCING_OP("KoloReducescatter").SetShapeFn(kolo_tf::rows_unknown);

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

KOLO_TF_KERNEL_CPU_GPU("KoloAllreduce", kolo_tf::AllreduceOp);
KOLO_TF_KERNEL_CPU_GPU("KoloGroupedAllreduce", kolo_tf::GroupedAllreduceOp);
KOLO_TF_KERNEL_CPU_GPU("KoloReducescatter", kolo_tf::ReducescatterOp);
