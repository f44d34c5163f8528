"""What the distributed optimizers share about the parameters they train: their names, and the hook that
runs once backward has accumulated a parameter's gradient, and how step() waits for the reductions."""
import contextlib
import warnings
import weakref

import torch

# torch 2.1 added a hook that runs once a parameter's gradient has been accumulated; older torch
# (Debian's 1.13) gets the same moment from a hook on the gradient's AccumulateGrad node.
_HAS_POST_ACCUMULATE_HOOK = hasattr(torch.Tensor, "register_post_accumulate_grad_hook")


def parameter_names(all_params, named_parameters):
    """Each parameter -> its name: named_parameters' (every parameter named once), else "param.<i>"."""
    if named_parameters is None:
        return {p: "param.%d" % i for i, p in enumerate(all_params)}
    named_parameters = list(named_parameters)
    names = [n for n, _ in named_parameters]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError("named_parameters has duplicate names: %s" % ", ".join(duplicates))
    by_param = {p: n for n, p in named_parameters}
    unnamed = [i for i, p in enumerate(all_params) if p not in by_param]
    if unnamed:
        raise ValueError("named_parameters lacks %d of the optimizer's parameters (indices %s); pass "
                         "model.named_parameters() for the model the optimizer trains" % (len(unnamed), unnamed[:10]))
    return by_param


def hyperparameters(group):
    """A parameter group's settings, without its parameters."""
    return {k: v for k, v in group.items() if k != "params"}


def register_accumulate_hooks(owner, params, on_gradient):
    """Calls on_gradient(owner, p) each time backward has accumulated p's gradient, for as long as
    `owner` (an optimizer) lives; what must be kept alive for the hooks to stay (remove_accumulate_hooks
    takes it). The parameters hold the hooks, and the hooks hold their optimizer weakly: a strong
    reference would keep a dropped optimizer alive as long as its model (torch 2 keeps a parameter's hooks
    where the garbage collector does not look), reducing gradients for nobody."""
    me = weakref.ref(owner)

    def make_hook(p):
        def hook(*_):
            alive = me()
            if alive is not None:
                on_gradient(alive, p)
        return hook

    refs = []
    for p in params:
        if _HAS_POST_ACCUMULATE_HOOK:
            refs.append(p.register_post_accumulate_grad_hook(make_hook(p)))
        else:
            accumulator = p.expand_as(p).grad_fn.next_functions[0][0]
            accumulator.register_hook(make_hook(p))
            refs.append(accumulator)  # the node must outlive this call
    return refs


def remove_accumulate_hooks(refs):
    """At an optimizer's end: its hooks leave the parameters (torch 2's handles; torch 1's nodes drop
    theirs with the node)."""
    for ref in refs:
        if hasattr(ref, "remove"):
            ref.remove()


@contextlib.contextmanager
def skipping_synchronize(optimizer):
    """optimizer.skip_synchronize(): for step() after an explicit synchronize()."""
    optimizer._should_synchronize = False
    try:
        yield
    finally:
        optimizer._should_synchronize = True


def synchronize_for_step(optimizer):
    """What step() does first: synchronize(), unless inside skip_synchronize()."""
    if optimizer._should_synchronize:
        if optimizer._synchronized:
            warnings.warn("optimizer.step() called without optimizer.skip_synchronize() right after "
                          "optimizer.synchronize(): the gradients are reduced again. Use `with "
                          "optimizer.skip_synchronize(): optimizer.step()`.")
        optimizer.synchronize()
    optimizer._synchronized = False
