"""Every public name of horovod.torch (at its last release) exists in kolo.torch, but those still to
come, listed here so that the gap is explicit and shrinks."""
import kolo.torch as kolo

HOROVOD_TORCH = [
    "elastic", "Compression", "allgather_object", "broadcast_object", "broadcast_optimizer_state",
    "broadcast_parameters", "allreduce", "allreduce_async", "allreduce_", "allreduce_async_", "grouped_allreduce",
    "grouped_allreduce_async", "grouped_allreduce_", "grouped_allreduce_async_", "sparse_allreduce_async",
    "allgather", "allgather_async", "grouped_allgather", "grouped_allgather_async", "broadcast", "broadcast_async",
    "broadcast_", "broadcast_async_", "alltoall", "alltoall_async", "reducescatter", "reducescatter_async",
    "grouped_reducescatter", "grouped_reducescatter_async", "join", "barrier", "poll", "synchronize", "init",
    "shutdown", "is_initialized", "start_timeline", "stop_timeline", "size", "local_size", "cross_size", "rank",
    "local_rank", "cross_rank", "mpi_threads_supported", "mpi_enabled", "mpi_built", "gloo_enabled", "gloo_built",
    "nccl_built", "ddl_built", "ccl_built", "cuda_built", "rocm_built", "ProcessSet", "global_process_set",
    "add_process_set", "remove_process_set", "Average", "Sum", "Adasum", "Min", "Max", "Product",
    "HorovodInternalError", "DistributedOptimizer", "SyncBatchNorm",
]
NOT_YET = []

# Horovod's parameters, in its order, for calls whose arguments scripts pass by position.
HOROVOD_SIGNATURES = {
    "allreduce": "tensor average name compression op prescale_factor postscale_factor process_set",
    "allreduce_async": "tensor average name op prescale_factor postscale_factor process_set",
    "allreduce_": "tensor average name op prescale_factor postscale_factor process_set",
    "grouped_allreduce": "tensors average name compression op prescale_factor postscale_factor process_set",
    "allgather": "tensor name process_set",
    "grouped_allgather": "tensors name process_set",
    "broadcast": "tensor root_rank name process_set",
    "broadcast_": "tensor root_rank name process_set",
    "alltoall": "tensor splits name process_set",
    "reducescatter": "tensor name compression op process_set prescale_factor postscale_factor",
    "reducescatter_async": "tensor name op process_set prescale_factor postscale_factor",
    "grouped_reducescatter": "tensors name compression op process_set prescale_factor postscale_factor",
    "sparse_allreduce_async": "tensor name op process_set",
    "barrier": "process_set",
    "broadcast_object": "obj root_rank name process_set",
    "broadcast_optimizer_state": "optimizer root_rank model",
    "DistributedOptimizer": "optimizer named_parameters compression backward_passes_per_step op "
                            "gradient_predivide_factor num_groups groups sparse_as_dense process_set",
}


def test_every_horovod_torch_name_but_those_to_come():
    assert [n for n in HOROVOD_TORCH if not hasattr(kolo, n)] == NOT_YET
    for name in ("run", "TorchState", "ElasticSampler", "State", "ObjectState", "HostsUpdatedInterrupt"):
        assert hasattr(kolo.elastic, name), name
    assert kolo.rocm_built() is False and kolo.mpi_built() is True


def test_horovod_positional_orders():
    import inspect
    for name, expected in HOROVOD_SIGNATURES.items():
        params = [p for p in inspect.signature(getattr(kolo, name)).parameters if not p.startswith("_")]
        assert params[:len(expected.split())] == expected.split(), name
