"""torch tensors as kolo's C ABI takes them (descriptors), and kolo's outputs back as torch tensors."""
import torch

from kolo._abi import (BFLOAT16, BOOL, CPU, CUDA, FLOAT16, FLOAT32, FLOAT64, INT16, INT32, INT64, INT8,
                       INVALID_ARGUMENT, UINT16, UINT8, _C)
from kolo._errors import KoloValueError

_DTYPES = {
    torch.uint8: UINT8,
    torch.int8: INT8,
    torch.int16: INT16,
    torch.int32: INT32,
    torch.int64: INT64,
    torch.float16: FLOAT16,
    torch.bfloat16: BFLOAT16,
    torch.float32: FLOAT32,
    torch.float64: FLOAT64,
    torch.bool: BOOL,
}
if hasattr(torch, "uint16"):  # torch 2.3 and later
    _DTYPES[torch.uint16] = UINT16
_DTYPES_TEXT = ", ".join(str(t).replace("torch.", "") for t in _DTYPES)


def _describe(tensor, name, role="input"):
    """The descriptor kolo's C ABI takes for `tensor`; strides go along so kolo can refuse
    non-contiguous tensors, naming them."""
    if not isinstance(tensor, torch.Tensor):
        raise KoloValueError("tensor '%s': expected a torch.Tensor as %s, got %s"
                             % (name or "(unnamed)", role, type(tensor).__name__), INVALID_ARGUMENT)
    code = _DTYPES.get(tensor.dtype)
    if code is None:
        raise KoloValueError(
            "tensor '%s' on rank %d: %s has dtype %s; kolo supports %s"
            % (name or "(unnamed)", _C.rank(), role, tensor.dtype, _DTYPES_TEXT),
            INVALID_ARGUMENT)
    if tensor.is_cuda:
        device_type, index = CUDA, tensor.device.index
        stream = torch.cuda.current_stream(tensor.device).cuda_stream
    else:
        device_type, index, stream = CPU, 0, 0
    return (tensor.data_ptr(), code, tuple(tensor.shape), tuple(tensor.stride()), device_type, index, stream)


def _name(name):
    return "" if name is None else str(name)


def _wrap_output(output, dtype, device):
    """A tensor over the memory kolo allocated for an output, without copying it (the tensor keeps
    kolo's buffer alive): host memory through the buffer protocol, GPU memory through CUDA's array
    interface."""
    shape = tuple(output.shape)
    if output.size_bytes == 0:
        return torch.empty(shape, dtype=dtype, device=device)
    if device.type == "cuda":
        return torch.as_tensor(output, device=device).view(dtype).reshape(shape)
    return torch.frombuffer(output, dtype=torch.uint8).view(dtype).reshape(shape)
