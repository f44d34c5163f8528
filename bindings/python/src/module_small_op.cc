// kolo._C.allreduce_cpu_in_place(name, data, dtype, shape, op, prescale, postscale, process_set): a
// blocking allreduce of a contiguous CPU tensor in place, kolo.torch's allreduce_ of a loss or a metric;
// allreduce_cpu_async_in_place, the same arguments, enqueues one (allreduce_async_) and returns its handle;
// allreduce_cpu, with the output's data after them, reduces out of place (allreduce of a metric).
// From Python most of such an op's time was the call itself; pybind11's dispatch (its casters, a
// std::string for the name, a vector for the shape) was the larger part of it. Each is a
// METH_FASTCALL function that reads its arguments straight from the interpreter's objects (the name's
// UTF-8 is the str's own, cached). Each raises what a failed op (or a refused one) raises.
#include <Python.h>

#include <cstdint>
#include <vector>

#include "module_parts.h"

namespace kolo_py {
namespace {

constexpr Py_ssize_t kArguments = 8;  // an out-of-place call takes the output's data pointer after them

// Reads the arguments every call takes into the tensor and options for kolo_allreduce (and `extra` more,
// left to the caller); false with a Python error set where one is missing or of the wrong type. The name
// points into `args`; the shape into this thread's storage, which kolo reads (copies) before anything runs
// that could call this again on this thread.
bool read_arguments(const char* call, PyObject* const* args, Py_ssize_t nargs, Py_ssize_t extra, kolo_tensor* t,
                    kolo_op_options* o) {
  thread_local std::vector<int64_t> dims;
  if (nargs != kArguments + extra) {
    PyErr_Format(PyExc_TypeError, "%s(name, data, dtype, shape, op, prescale, postscale, process_set%s): "
                 "%zd arguments given, not %zd", call, extra ? ", output" : "", nargs, kArguments + extra);
    return false;
  }
  const char* name = PyUnicode_AsUTF8AndSize(args[0], nullptr);
  if (name == nullptr) return false;
  if (!PyTuple_Check(args[3])) {
    PyErr_Format(PyExc_TypeError, "%s: shape must be a tuple, not %s", call, Py_TYPE(args[3])->tp_name);
    return false;
  }
  dims.resize(static_cast<size_t>(PyTuple_GET_SIZE(args[3])));
  for (size_t d = 0; d < dims.size(); ++d) dims[d] = PyLong_AsLongLong(PyTuple_GET_ITEM(args[3], d));
  *t = kolo_tensor{};
  t->data = PyLong_AsVoidPtr(args[1]);
  t->dtype = static_cast<int32_t>(PyLong_AsLong(args[2]));
  t->ndim = static_cast<int32_t>(dims.size());
  t->shape = dims.data();
  t->device_type = KOLO_CPU;
  kolo_op_options_init(o);
  o->name = name;
  o->reduce_op = static_cast<int32_t>(PyLong_AsLong(args[4]));
  o->prescale_factor = PyFloat_AsDouble(args[5]);
  o->postscale_factor = PyFloat_AsDouble(args[6]);
  o->process_set = static_cast<int32_t>(PyLong_AsLong(args[7]));
  return PyErr_Occurred() == nullptr;  // else an argument of the wrong type
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

// A blocking allreduce, the GIL released meanwhile: None, or the error of a failed op set.
PyObject* run_blocking(kolo_tensor* input, kolo_tensor* output, kolo_op_options* o) {
  o->blocking = 1;
  int32_t code;
  Py_BEGIN_ALLOW_THREADS
  code = kolo_allreduce(input, output, o, nullptr);
  Py_END_ALLOW_THREADS
  if (code == KOLO_OK) Py_RETURN_NONE;
  return failed(code);
}

PyObject* allreduce_cpu_in_place(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  kolo_tensor t;
  kolo_op_options o;
  if (!read_arguments("allreduce_cpu_in_place", args, nargs, 0, &t, &o)) return nullptr;
  return run_blocking(&t, &t, &o);
}

// Out of place, into a contiguous CPU tensor of the same dtype and shape (kolo.torch's allreduce of a metric).
PyObject* allreduce_cpu(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  kolo_tensor t;
  kolo_op_options o;
  if (!read_arguments("allreduce_cpu", args, nargs, 1, &t, &o)) return nullptr;
  kolo_tensor out = t;
  out.data = PyLong_AsVoidPtr(args[kArguments]);
  if (PyErr_Occurred() != nullptr) return nullptr;
  return run_blocking(&t, &out, &o);
}

// Enqueues, never waiting on other ranks (the GIL kept, as pybind11's allreduce_async does): the handle, or
// the error of a call kolo refused at once.
PyObject* allreduce_cpu_async_in_place(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  kolo_tensor t;
  kolo_op_options o;
  if (!read_arguments("allreduce_cpu_async_in_place", args, nargs, 0, &t, &o)) return nullptr;
  kolo_handle h = 0;
  const int32_t code = kolo_allreduce(&t, &t, &o, &h);
  if (code == KOLO_OK) return PyLong_FromLongLong(h);
  return failed(code);
}

PyMethodDef allreduce_cpu_in_place_def = {
    "allreduce_cpu_in_place", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&allreduce_cpu_in_place)),
    METH_FASTCALL,
    "allreduce_cpu_in_place(name, data, dtype, shape, op, prescale, postscale, process_set): a blocking "
    "allreduce of a contiguous CPU tensor in place; raises what a failed op raises"};

PyMethodDef allreduce_cpu_def = {
    "allreduce_cpu", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&allreduce_cpu)), METH_FASTCALL,
    "allreduce_cpu(name, data, dtype, shape, op, prescale, postscale, process_set, output): a blocking "
    "allreduce of a contiguous CPU tensor into `output` (the data of a contiguous tensor of its dtype and "
    "shape); raises what a failed op raises"};

PyMethodDef allreduce_cpu_async_in_place_def = {
    "allreduce_cpu_async_in_place",
    reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&allreduce_cpu_async_in_place)), METH_FASTCALL,
    "allreduce_cpu_async_in_place(name, data, dtype, shape, op, prescale, postscale, process_set): enqueues an "
    "allreduce of a contiguous CPU tensor in place and returns its handle; raises where kolo refuses it at once"};

void add_function(py::module_& m, PyMethodDef* def) {
  PyObject* f = PyCFunction_NewEx(def, nullptr, m.attr("__name__").ptr());
  if (f == nullptr) throw py::error_already_set();
  m.add_object(def->ml_name, py::reinterpret_steal<py::object>(f));
}

}  // namespace

void register_small_op(py::module_& m) {
  add_function(m, &allreduce_cpu_in_place_def);
  add_function(m, &allreduce_cpu_def);
  add_function(m, &allreduce_cpu_async_in_place_def);
}

}  // namespace kolo_py
