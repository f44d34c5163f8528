"""Elastic training with Horovod's API: a job that survives a lost rank and grows when hosts come.

A training function decorated with the framework's ``elastic.run`` (``kolo.torch.elastic.run``) takes
a ``State`` first. ``state.commit()`` marks a point the job can go back to; when a peer fails, the
survivors go back to the last commit and train on; when hosts are added, the job takes them at the
next commit. Where the job runs decides how:

- Under ``kolorun`` in elastic mode (``--min-np``/``--max-np``/``--host-discovery-script``: the restart
  path, for any MPI): a failure ends the attempt, and kolorun starts the workers again on the hosts
  that are left; each host keeps the last commit in memory (``/dev/shm``), so the new workers resume
  from it without a shared file system. Hosts added are taken by a planned restart at the next commit.
- In place, where the MPI has ULFM and the job runs with it on (Open MPI 5: ``mpirun --with-ft ulfm --mca
  btl tcp,self``): no process restarts. The survivors' ops fail with ``PeersFailedError``; each rolls
  back to its last commit, kolo shrinks the job to them (``recover_in_place``), they take rank 0's
  state and go on.
- Anywhere else (plain mpirun, kolorun without elastic options): commits are kept in memory in the
  process, ``restore()`` works, and a lost peer ends the job with kolo's error, as in a non-elastic job.
"""
from kolo._errors import HorovodInternalError, KoloError, PeersFailedError
from kolo.elastic.runner import HostsUpdatedInterrupt, is_elastic_launch, run_fn
from kolo.elastic.state import ObjectState, State

__all__ = ["State", "ObjectState", "run_fn", "HostsUpdatedInterrupt", "HorovodInternalError", "KoloError",
           "PeersFailedError", "is_elastic_launch"]
