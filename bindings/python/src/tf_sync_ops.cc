// kolo.tensorflow's ops that move no tensor, KoloJoin and KoloBarrier: they wait for the other ranks.
#include <string>

#include "tf_op_base.h"

namespace kolo_tf {
namespace {

using tensorflow::AsyncOpKernel;
using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;
using tensorflow::Tensor;
using tensorflow::TensorShape;

const std::string kNoName;  // join and barrier have names of their own

class JoinOp : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    submit([](kolo_done_fn fn, void* data, kolo_handle* h) {
             const kolo_op_options opts = op_options(kNoName, 0, fn, data);
             return kolo_join(&opts, h);
           },
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
    submit([set](kolo_done_fn fn, void* data, kolo_handle* h) {
             const kolo_op_options opts = op_options(kNoName, set, fn, data);
             return kolo_barrier(&opts, h);
           },
           [ctx, done](int32_t code, const std::string& message, kolo_output*) {
             absl::Status s = tf_status(code, message);
             if (!s.ok()) ctx->SetStatus(s);
             done();
           });
  }

 private:
  int process_set_ = 0;
};

}  // namespace
}  // namespace kolo_tf

REGISTER_OP("KoloJoin").Output("last_joined_rank: int32").SetIsStateful().SetShapeFn(
    [](tensorflow::shape_inference::InferenceContext* c) {
      c->set_output(0, c->Scalar());
      return absl::OkStatus();
    });

REGISTER_OP("KoloBarrier").Attr("process_set_id: int = 0").SetIsStateful().SetShapeFn(
    [](tensorflow::shape_inference::InferenceContext*) { return absl::OkStatus(); });

KOLO_TF_KERNEL_CPU_GPU("KoloBarrier", kolo_tf::BarrierOp);
REGISTER_KERNEL_BUILDER(Name("KoloJoin").Device(tensorflow::DEVICE_CPU), kolo_tf::JoinOp);
// On GPUs the rank it returns stays in host memory.
REGISTER_KERNEL_BUILDER(Name("KoloJoin").Device(tensorflow::DEVICE_GPU).HostMemory("last_joined_rank"),
                        kolo_tf::JoinOp);
