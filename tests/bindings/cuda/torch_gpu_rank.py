"""Each rank of a torch suite on CUDA tensors pins its GPU: local_rank % GPUs. Where ranks outnumber GPUs (the GPU
machine has one) each claims a host of its own for NCCL (NCCL_HOSTID), which NCCL then connects through sockets."""
import os

import torch


def pin_gpu():
    local_rank = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", "0"))
    local_size = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE", "1"))
    if local_size > torch.cuda.device_count() and "NCCL_HOSTID" not in os.environ:
        os.environ["NCCL_HOSTID"] = "kolo-test-%s" % os.environ.get("OMPI_COMM_WORLD_RANK", "0")
        os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")
    torch.cuda.set_device(local_rank % torch.cuda.device_count())
