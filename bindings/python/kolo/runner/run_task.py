"""What each rank of a kolo.run job runs (`python -m kolo.runner.run_task`): takes the function from the
caller, runs it, and gives the caller its result. An exception is printed here, with this rank's number,
and the rank exits 1, so that kolorun ends the job and kolo.run raises."""
import os
import pickle
import sys
import traceback

from kolo.runner import _service


def _rank():
    for name in ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"):
        if os.environ.get(name) is not None:
            return int(os.environ[name])
    return 0


def main():
    rank = _rank()
    func = pickle.loads(_service.fetch_function())
    try:
        result = func()
    except BaseException:  # noqa: B036: whatever it was, the caller hears of it through the job's status
        sys.stderr.write("kolo.run: rank %d's function raised:\n%s" % (rank, traceback.format_exc()))
        sys.stderr.flush()
        os._exit(1)
    _service.put_result(int(os.environ.get("KOLO_ELASTIC_ATTEMPT", "0")), rank, pickle.dumps(result))


if __name__ == "__main__":
    main()
