// kolo.tensorflow's KoloBroadcast: the root rank's tensor on every rank.
#include "tf_op_base.h"

namespace kolo_tf {
namespace {

using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;

class BroadcastOp : public KoloOp {
 public:
  explicit BroadcastOp(OpKernelConstruction* c) : KoloOp(c) { OP_REQUIRES_OK(c, c->GetAttr("root_rank", &root_)); }
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    submit_same_shape(ctx, done, [&](const kolo_tensor* i, const kolo_tensor* o, kolo_done_fn fn, void* data,
                                     kolo_handle* h) {
      kolo_op_options opts = options(fn, data);
      opts.root_rank = root_;
      return kolo_broadcast(i, o, &opts, h);
    });
  }

 private:
  int root_ = 0;
};

}  // namespace
}  // namespace kolo_tf

REGISTER_OP("KoloBroadcast")
    .Attr(KOLO_TF_TYPES)
    .Attr("tensor_name: string")
    .Attr("root_rank: int")
    .Attr("process_set_id: int = 0")
    .Input("tensor: T")
    .Output("output: T")
    .SetIsStateful()
    .SetShapeFn(kolo_tf::same_shape);

KOLO_TF_KERNEL_CPU_GPU("KoloBroadcast", kolo_tf::BroadcastOp);
