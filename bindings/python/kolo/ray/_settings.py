"""RayExecutor.create_settings' result, as horovod.ray's MiniSettings: what the job's start needs."""
import os
from dataclasses import dataclass
from typing import Optional, Sequence


@dataclass
class RaySettings:
    """timeout_s: how long the ranks wait for each other to start (kolo's KOLO_GLOO_TIMEOUT_SECONDS).
    placement_group_timeout_s: how long start() waits for Ray to place every worker. nics: the network
    interfaces for kolo's connections between nodes (the first is used: KOLO_GLOO_IFACE); None: the one each
    node reaches the driver through. ssh_identity_file: kept for horovod.ray's signature; kolo starts no ssh."""
    timeout_s: int = 30
    placement_group_timeout_s: int = 100
    nics: Optional[Sequence[str]] = None
    ssh_identity_file: Optional[str] = None
    verbose: int = 1


def create_settings(timeout_s=30, ssh_identity_file=None, ssh_str=None, placement_group_timeout_s=100, nics=None):
    if ssh_str and ssh_identity_file and not os.path.exists(ssh_identity_file):
        # horovod.ray writes the key where asked; kolo needs none, but a script may read it back.
        fd = os.open(ssh_identity_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(ssh_str)
    return RaySettings(timeout_s=timeout_s, placement_group_timeout_s=placement_group_timeout_s,
                       nics=list(nics) if nics else None, ssh_identity_file=ssh_identity_file)
