"""What this kolo was built with, by Horovod's names, and the timeline."""
from kolo._abi import OK, _C
from kolo._errors import error_for


# What this kolo was built with, and which world the ranks formed, by Horovod's names. kolo always links
# MPI; the Gloo world is built where Gloo was found (KOLO_WITH_GLOO); it has no ROCm, DDL or oneCCL.
def mpi_built():
    return True


def mpi_enabled():
    """Whether the ranks formed an MPI world (mpirun, kolorun, Slurm); False before init()."""
    return _C.controller() == 1


def gloo_built():
    return bool(_C.gloo_built())


def gloo_enabled():
    """Whether the ranks formed a Gloo world (kolorun --gloo, torchrun, any launcher); False before init()."""
    return _C.controller() == 2


def nccl_built():
    """NCCL's version code (major * 10000 + minor * 100 + patch) when kolo was built with NCCL, else 0."""
    return _C.nccl_built()


def cuda_built():
    return _C.cuda_built()


def rocm_built():
    return False


def ddl_built():
    return False


def ccl_built():
    return False


def start_timeline(file_path, mark_cycles=False):
    """Writes a Chrome trace of every op to `file_path` from now on (a name with %r gives each rank its
    own file, else rank 0 writes); `mark_cycles` also marks negotiation cycles."""
    code, message = _C.start_timeline(str(file_path), bool(mark_cycles))
    if code != OK:
        raise error_for(code, message)


def stop_timeline():
    """Closes the timeline started by start_timeline (or KOLO_TIMELINE)."""
    code, message = _C.stop_timeline()
    if code != OK:
        raise error_for(code, message)
