"""One import for what kolo's modules share below the bindings: the extension module and the C ABI's codes
(_abi), errors (_errors), the lifecycle and this rank's place (_lifecycle), build queries and the timeline
(_queries) and handles (_handles). Each job lives in its own module; this one only gathers their names."""
from kolo._abi import *  # noqa: F401,F403
from kolo._abi import _C  # noqa: F401
from kolo._errors import HorovodInternalError, KoloError, KoloValueError, PeersFailedError, error_for  # noqa: F401
from kolo._handles import Handles, Pending  # noqa: F401
from kolo._lifecycle import (_exiting_with, build_summary, cross_rank, cross_size,  # noqa: F401
                             in_place_recovery, init, is_homogeneous, is_initialized, local_rank,
                             local_size, mpi_threads_supported, nccl_runtime, rank, recover_in_place,
                             shutdown, size, version)
from kolo._queries import (ccl_built, cuda_built, ddl_built, gloo_built, gloo_enabled,  # noqa: F401
                           mpi_built, mpi_enabled, nccl_built, rocm_built, start_timeline, stop_timeline)
