"""kolo.torch's calls for a small CPU tensor (a metric, a loss), which take one call into kolo with no
descriptors: exact results, inputs left as they were, and refusals that name the tensor and the rank."""
import pytest
import torch

import kolo.torch as kolo


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.float16])
def test_allreduce_async_in_place_of_a_cpu_tensor_is_exact_and_a_refusal_loses_nothing(dtype, rank, size):
    # A contiguous CPU tensor takes one call with no descriptors; a strided one, the descriptors' way.
    base = (torch.arange(12) % 5 + rank + 1).to(dtype)
    expected = sum((torch.arange(12) % 5 + r + 1) for r in range(size)).to(dtype)
    plain, strided = base.clone(), base.clone().reshape(3, 4).t()
    for layout, tensor, want in (("plain", plain, expected), ("strided", strided, expected.reshape(3, 4).t())):
        if layout == "strided":
            with pytest.raises(kolo.KoloValueError, match="async.strided.*rank %d" % rank):
                kolo.allreduce_async_(tensor, op=kolo.Sum, name="async.strided.%s" % dtype)
            continue
        # Refused at once, naming the tensor and the rank, the tensor untouched; then the same name is free.
        with pytest.raises(kolo.KoloValueError, match="tensor 'async.%s.%s' on rank %d: scale factors must be finite"
                           % (layout, dtype, rank)):
            kolo.allreduce_async_(tensor, op=kolo.Sum, name="async.%s.%s" % (layout, dtype),
                                  prescale_factor=float("nan"))
        assert torch.equal(tensor, base)
        handle = kolo.allreduce_async_(tensor, op=kolo.Sum, name="async.%s.%s" % (layout, dtype))
        got = kolo.synchronize(handle)
        assert got is tensor and torch.equal(got, want)
    # Average (the default op), scaled as allreduce_ scales it.
    averaged = kolo.synchronize(kolo.allreduce_async_(base.clone(), name="async.avg.%s" % dtype))
    assert torch.equal(averaged, kolo.allreduce(base.clone(), name="avg.%s" % dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.float16])
def test_allreduce_of_a_cpu_tensor_outside_autograd_is_a_new_exact_tensor(dtype, rank, size):
    # Outside autograd (a metric, a loss under no_grad), allreduce reduces a copy in place through
    # allreduce_'s one call: the input is left as it was, whatever its layout; inside autograd the
    # result still has its gradient function.
    base = (torch.arange(12) % 5 + rank + 1).to(dtype)
    expected = sum((torch.arange(12) % 5 + r + 1) for r in range(size)).to(dtype)
    for layout, tensor in (("plain", base.clone()), ("strided", base.clone().reshape(3, 4).t())):
        before = tensor.clone()
        got = kolo.allreduce(tensor, op=kolo.Sum, name="out.%s.%s" % (layout, dtype))
        assert got is not tensor and torch.equal(tensor, before)
        assert got.shape == tensor.shape and got.dtype == dtype
        assert torch.equal(got, expected.reshape(3, 4).t() if layout == "strided" else expected)
        with pytest.raises(kolo.KoloValueError, match="tensor 'out.nan.%s.%s' on rank %d: scale factors must be "
                           "finite" % (layout, dtype, rank)):
            kolo.allreduce(tensor, name="out.nan.%s.%s" % (layout, dtype), postscale_factor=float("inf"))
        assert torch.equal(tensor, before)
    if dtype.is_floating_point:
        leaf = base.clone().requires_grad_()
        with torch.no_grad():
            plain = kolo.allreduce(leaf, op=kolo.Sum, name="out.nograd.%s" % dtype)
        assert plain.grad_fn is None and torch.equal(plain, expected)
        tracked = kolo.allreduce(leaf, op=kolo.Sum, name="out.grad.%s" % dtype)
        assert tracked.grad_fn is not None and torch.equal(tracked.detach(), expected)
        tracked.sum().backward()
        assert torch.equal(leaf.grad, torch.full_like(leaf, size))
