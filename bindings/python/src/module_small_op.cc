// kolo._C.allreduce_cpu_in_place(name, data, dtype, shape, op, prescale, postscale, process_set): a
// blocking allreduce of a contiguous CPU tensor in place, kolo.torch's allreduce_ of a loss or a metric.
// From Python most of such an op's time was the call itself; pybind11's dispatch (its casters, a
// std::string for the name, a vector for the shape) was the larger part of it. This one function is a
// METH_FASTCALL function that reads its arguments straight from the interpreter's objects (the name's
// UTF-8 is the str's own, cached). Raises what a failed op raises; else returns None.
#include <Python.h>

#include <cstdint>
#include <vector>

#include "module_parts.h"

namespace kolo_py {
namespace {

constexpr Py_ssize_t kArguments = 8;

PyObject* allreduce_cpu_in_place(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != kArguments) {
    PyErr_Format(PyExc_TypeError,
                 "allreduce_cpu_in_place(name, data, dtype, shape, op, prescale, postscale, process_set): "
                 "%zd arguments given, not %zd", nargs, kArguments);
    return nullptr;
  }
  const char* name = PyUnicode_AsUTF8AndSize(args[0], nullptr);
  if (name == nullptr) return nullptr;
  if (!PyTuple_Check(args[3])) {
    PyErr_Format(PyExc_TypeError, "allreduce_cpu_in_place: shape must be a tuple, not %s", Py_TYPE(args[3])->tp_name);
    return nullptr;
  }
  // Read by kolo before anything runs that could call this again on this thread.
  thread_local std::vector<int64_t> dims;
  dims.resize(static_cast<size_t>(PyTuple_GET_SIZE(args[3])));
  for (size_t d = 0; d < dims.size(); ++d) dims[d] = PyLong_AsLongLong(PyTuple_GET_ITEM(args[3], d));
  kolo_tensor t{};
  t.data = PyLong_AsVoidPtr(args[1]);
  t.dtype = static_cast<int32_t>(PyLong_AsLong(args[2]));
  t.ndim = static_cast<int32_t>(dims.size());
  t.shape = dims.data();
  t.device_type = KOLO_CPU;
  kolo_op_options o;
  kolo_op_options_init(&o);
  o.name = name;
  o.reduce_op = static_cast<int32_t>(PyLong_AsLong(args[4]));
  o.prescale_factor = PyFloat_AsDouble(args[5]);
  o.postscale_factor = PyFloat_AsDouble(args[6]);
  o.process_set = static_cast<int32_t>(PyLong_AsLong(args[7]));
  o.blocking = 1;
  if (PyErr_Occurred() != nullptr) return nullptr;  // an argument of the wrong type
  int32_t code;
  Py_BEGIN_ALLOW_THREADS
  code = kolo_allreduce(&t, &t, &o, nullptr);
  Py_END_ALLOW_THREADS
  if (code == KOLO_OK) Py_RETURN_NONE;
  try {
    raise_failed(code);
  } catch (py::error_already_set& e) {
    e.restore();
  }
  return nullptr;
}

PyMethodDef allreduce_cpu_in_place_def = {
    "allreduce_cpu_in_place", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&allreduce_cpu_in_place)),
    METH_FASTCALL,
    "allreduce_cpu_in_place(name, data, dtype, shape, op, prescale, postscale, process_set): a blocking "
    "allreduce of a contiguous CPU tensor in place; raises what a failed op raises"};

}  // namespace

void register_small_op(py::module_& m) {
  PyObject* f = PyCFunction_NewEx(&allreduce_cpu_in_place_def, nullptr, m.attr("__name__").ptr());
  if (f == nullptr) throw py::error_already_set();
  m.add_object("allreduce_cpu_in_place", py::reinterpret_steal<py::object>(f));
}

}  // namespace kolo_py
