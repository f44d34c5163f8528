// kolo._C.allreduce(name, input, output, op, prescale, postscale, process_set, compression, blocking): Python's one
// entry for an allreduce, as kolo_allreduce is the C ABI's. input and output describe tensors: (data, dtype, shape)
// for a contiguous CPU tensor, or (data, dtype, shape, strides, device_type, device_index, stream); output None
// reduces in place. blocking: returns None once the op is done, the GIL released meanwhile (its cycle may run on
// this thread); else enqueues, the GIL kept, and returns the handle. Either raises what a failed (or refused) op
// raises.
// A METH_FASTCALL function reading the interpreter's objects itself: for a small op from Python, pybind11's
// dispatch (its casters, a std::string for the name, vectors for the shape) was most of the call.
#include <Python.h>

#include <cstdint>
#include <vector>

#include "module_parts.h"

namespace kolo_py {
namespace {

constexpr Py_ssize_t kArguments = 9;
constexpr const char* kSignature =
    "allreduce(name, input, output, op, prescale, postscale, process_set, compression, blocking)";

// A tensor's shape and strides, kept in this thread's storage until kolo has copied them (it does before
// kolo_allreduce returns).
struct Dims {
  std::vector<int64_t> shape, strides;
};

bool read_ints(PyObject* tuple, const char* role, const char* what, std::vector<int64_t>& out) {
  if (!PyTuple_Check(tuple)) {
    PyErr_Format(PyExc_TypeError, "allreduce: the %s's %s must be a tuple, not %s", role, what, Py_TYPE(tuple)->tp_name);
    return false;
  }
  out.resize(static_cast<size_t>(PyTuple_GET_SIZE(tuple)));
  for (size_t d = 0; d < out.size(); ++d) out[d] = PyLong_AsLongLong(PyTuple_GET_ITEM(tuple, d));
  return true;
}

// `described` (3 or 7 items, above) into `t`; false with a Python error set where it is malformed.
bool read_tensor(PyObject* described, const char* role, Dims& dims, kolo_tensor* t) {
  const Py_ssize_t n = PyTuple_Check(described) ? PyTuple_GET_SIZE(described) : -1;
  if (n != 3 && n != 7) {
    PyErr_Format(PyExc_TypeError, "allreduce: the %s must be (data, dtype, shape) or (data, dtype, shape, strides, "
                 "device_type, device_index, stream), not %s", role, Py_TYPE(described)->tp_name);
    return false;
  }
  PyObject* const* item = &PyTuple_GET_ITEM(described, 0);
  *t = kolo_tensor{};
  t->data = PyLong_AsVoidPtr(item[0]);
  t->dtype = static_cast<int32_t>(PyLong_AsLong(item[1]));
  if (!read_ints(item[2], role, "shape", dims.shape)) return false;
  t->ndim = static_cast<int32_t>(dims.shape.size());
  t->shape = dims.shape.data();
  t->device_type = KOLO_CPU;
  if (n == 7) {
    if (!read_ints(item[3], role, "strides", dims.strides)) return false;
    t->strides = dims.strides.empty() ? nullptr : dims.strides.data();
    t->device_type = static_cast<int32_t>(PyLong_AsLong(item[4]));
    t->device_index = static_cast<int32_t>(PyLong_AsLong(item[5]));
    t->stream = PyLong_AsVoidPtr(item[6]);
  }
  return PyErr_Occurred() == nullptr;  // else an item of the wrong type
}

// Sets the Python error a failed op raises; returns nullptr.
PyObject* failed(int32_t code) {
  try {
    raise_failed(code);
  } catch (py::error_already_set& e) {
    e.restore();
  }
  return nullptr;
}

PyObject* allreduce(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  thread_local Dims dims[2];  // the input's, the output's
  if (nargs != kArguments) {
    PyErr_Format(PyExc_TypeError, "%s: %zd arguments given, not %zd", kSignature, nargs, kArguments);
    return nullptr;
  }
  kolo_tensor input, output;
  if (!read_tensor(args[1], "input", dims[0], &input)) return nullptr;
  const bool in_place = args[2] == Py_None;
  if (!in_place && !read_tensor(args[2], "output", dims[1], &output)) return nullptr;
  const char* name = PyUnicode_AsUTF8AndSize(args[0], nullptr);  // the str's own UTF-8, cached
  if (name == nullptr) return nullptr;
  kolo_op_options o;
  kolo_op_options_init(&o);
  o.name = name;
  o.reduce_op = static_cast<int32_t>(PyLong_AsLong(args[3]));
  o.prescale_factor = PyFloat_AsDouble(args[4]);
  o.postscale_factor = PyFloat_AsDouble(args[5]);
  o.process_set = static_cast<int32_t>(PyLong_AsLong(args[6]));
  o.compression = static_cast<int32_t>(PyLong_AsLong(args[7]));
  const int blocking = PyObject_IsTrue(args[8]);
  if (blocking < 0 || PyErr_Occurred() != nullptr) return nullptr;  // an argument of the wrong type
  kolo_tensor* out = in_place ? &input : &output;
  if (blocking) {
    o.blocking = 1;
    int32_t code;
    Py_BEGIN_ALLOW_THREADS
    code = kolo_allreduce(&input, out, &o, nullptr);
    Py_END_ALLOW_THREADS
    if (code == KOLO_OK) Py_RETURN_NONE;
    return failed(code);
  }
  kolo_handle h = 0;
  const int32_t code = kolo_allreduce(&input, out, &o, &h);
  if (code == KOLO_OK) return PyLong_FromLongLong(h);
  return failed(code);
}

PyMethodDef allreduce_def = {
    "allreduce", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&allreduce)), METH_FASTCALL,
    "allreduce(name, input, output, op, prescale, postscale, process_set, compression, blocking): an allreduce of "
    "`input` ((data, dtype, shape) for a contiguous CPU tensor, or (data, dtype, shape, strides, device_type, "
    "device_index, stream)) into `output` (described alike; None: in place). blocking: None once done, else the "
    "handle. Raises what a failed or refused op raises"};

}  // namespace

void register_allreduce(py::module_& m) {
  PyObject* f = PyCFunction_NewEx(&allreduce_def, nullptr, m.attr("__name__").ptr());
  if (f == nullptr) throw py::error_already_set();
  m.add_object(allreduce_def.ml_name, py::reinterpret_steal<py::object>(f));
}

}  // namespace kolo_py
