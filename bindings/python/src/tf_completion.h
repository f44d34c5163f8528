// How kolo.tensorflow's asynchronous kernels learn that their op ended, without blocking a
// TensorFlow thread. The kernel enqueues through the C ABI with on_done() as the op's callback; the
// callback (on kolo's thread) hands the op to one completion thread, which takes the handle's result
// with kolo_wait (releasing the handle) and runs the kernel's finish, which calls TensorFlow's done.
// A call that kolo refuses at once returns its status and gets no callback: submit() finishes it on the
// caller's thread.
#ifndef KOLO_TF_COMPLETION_H_
#define KOLO_TF_COMPLETION_H_

#include <functional>
#include <string>

#include "kolo/c_api.h"

namespace kolo_tf {

// An op's outcome: kolo's status code and message, and its kolo_output (may be NULL; freed after
// finish returns).
using Finish = std::function<void(int32_t code, const std::string& message, kolo_output* output)>;

// Enqueues with `enqueue(done_fn, done_data, handle)`, which must pass them on to an op's entry point
// (done_fn and done_data as its options' done and done_data) and return its status; `finish` runs
// exactly once, when the op has ended.
void submit(const std::function<int32_t(kolo_done_fn, void*, kolo_handle*)>& enqueue, Finish finish);

}  // namespace kolo_tf

#endif  // KOLO_TF_COMPLETION_H_
