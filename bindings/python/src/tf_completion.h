// How kolo.tensorflow's asynchronous kernels learn that their op ended, without blocking a
// TensorFlow thread. The kernel enqueues through the C ABI with on_done() as the op's callback; the
// callback (on kolo's thread) hands the op to one completion thread, which takes the handle's result
// with kolo_wait (releasing the handle) and runs the kernel's finish, which calls TensorFlow's done.
// A call that kolo rejects at once gets no callback: submit() finishes it on the caller's thread.
#ifndef KOLO_TF_COMPLETION_H_
#define KOLO_TF_COMPLETION_H_

#include <functional>
#include <string>

#include "kolo/c_api.h"

namespace kolo_tf {

// An op's outcome: kolo's status code and message, and its kolo_output (may be NULL; freed after
// finish returns).
using Finish = std::function<void(int32_t code, const std::string& message, kolo_output* output)>;

// Enqueues with `enqueue(done_fn, done_data)`, which must pass both on to a kolo_*_async call and
// return its handle; `finish` runs exactly once, when the op has ended.
void submit(const std::function<kolo_handle(kolo_done_fn, void*)>& enqueue, Finish finish);

}  // namespace kolo_tf

#endif  // KOLO_TF_COMPLETION_H_
