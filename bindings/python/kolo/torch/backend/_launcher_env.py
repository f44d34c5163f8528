"""torch.distributed's env:// reads RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE; an MPI launcher (mpirun,
Slurm's srun) gives them under its own names. Where torch's are unset, they are set from the launcher's, so that
init_process_group("kolo") under mpirun finds them (MASTER_ADDR and MASTER_PORT come from kolorun, or from the
job script)."""
import os

_NAMES = (  # torch's name, then the launchers' in the order they are trusted (MPI's own first)
    ("RANK", ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID")),
    ("WORLD_SIZE", ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS")),
    ("LOCAL_RANK", ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID")),
    ("LOCAL_WORLD_SIZE", ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE")),
)


def export_launcher_ranks(environ=os.environ):
    """Sets torch's rank variables from an MPI launcher's where torch's are all unset; returns those it set."""
    if "RANK" in environ or not any(n in environ for n in _NAMES[0][1]):
        return {}
    exported = {}
    for torch_name, launcher_names in _NAMES:
        for name in launcher_names:
            value = environ.get(name, "")
            if value.isdigit():
                exported[torch_name] = environ[torch_name] = value
                break
    return exported
