"""How a collective's kolo op becomes torch's Work: none for a blocking call on CPU tensors (finished here; a
finished one before torch 2.8), a finished one for a GPU op (then ordered on the caller's stream), or one in
flight until wait() or its future."""
from kolo.torch._handles import synchronize
from kolo.torch.backend._torch_version import NONE_IS_FINISHED
from kolo.torch.backend._work import KoloWork, done_work


def finished(result):
    """What a blocking call finished here gives torch: nothing where torch takes that (making a Work was a fifth
    of a small op's time), else a finished Work."""
    return None if NONE_IS_FINISHED else done_work(result)


def blocking(opts):
    """torch 2.x says whether the caller waits at once (async_op=False); without that, as async."""
    return opts is not None and getattr(opts, "asyncOp", True) is False


def issue(handle, finish, sample, opts):
    """Work for the kolo op `handle`; finish(kolo's output) makes the result (the tensors torch hands back)."""
    if sample.is_cuda:
        # Waits until kolo has launched the op, then orders the current stream after it; the future's
        # devices make torch record that stream for whoever uses the result.
        return done_work(finish(synchronize(handle)), [sample.device])
    if blocking(opts):
        return finished(finish(synchronize(handle)))
    return KoloWork(handle, finish)
