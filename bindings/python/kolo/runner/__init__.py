"""kolo.run: Horovod's `horovod.run`, a function run on every rank of a job that kolorun starts, its
return values handed back as a list by rank. The arguments are horovod.run's, each the kolorun option of
the same name (kolorun --help)."""
import os
import pickle
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

from kolo._errors import KoloValueError
from kolo.runner import _service

__all__ = ["run"]


def _kolorun():
    package = Path(__file__).resolve().parents[1]
    for candidate in (package / "bin" / "kolorun", package.parents[1] / "bin" / "kolorun"):
        if os.access(str(candidate), os.X_OK):
            return str(candidate)  # pip's install, or a build tree's (build/python/kolo, build/bin)
    found = shutil.which("kolorun")
    if found is None:
        raise KoloValueError("kolo.run: kolorun not found next to the kolo package or on PATH")
    return found


def _pickled(func, args, kwargs):
    def call():
        return func(*args, **kwargs)

    try:
        import cloudpickle
    except ImportError:
        raise KoloValueError("kolo.run sends the function to the ranks by value, with cloudpickle: pip install "
                             "cloudpickle") from None
    return cloudpickle.dumps(call)


def _options(num_proc, min_num_proc, max_num_proc, slots, reset_limit, cooldown_range, hosts, hostfile,
             host_discovery_script, start_timeout, ssh_port, ssh_identity_file, disable_cache, output_filename,
             verbose, use_gloo, use_mpi, mpi_args, network_interfaces):
    """kolorun's command line for horovod.run's arguments."""
    options = []
    for flag, value in (("-np", num_proc), ("--min-np", min_num_proc), ("--max-np", max_num_proc),
                        ("--slots-per-host", slots), ("--reset-limit", reset_limit), ("-H", hosts),
                        ("--hostfile", hostfile), ("--host-discovery-script", host_discovery_script),
                        ("--start-timeout", start_timeout), ("-p", ssh_port), ("-i", ssh_identity_file),
                        ("--output-filename", output_filename), ("--mpi-args", mpi_args)):
        if value is not None:
            options += [flag, str(value)]
    if cooldown_range is not None:
        options += ["--blacklist-cooldown-range", str(cooldown_range[0]), str(cooldown_range[1])]
    if network_interfaces:
        options += ["--network-interfaces", ",".join(network_interfaces)]
    for flag, on in (("--disable-cache", disable_cache), ("--verbose", verbose), ("--gloo", use_gloo),
                     ("--mpi", use_mpi)):
        if on:
            options.append(flag)
    return options


def _environment(service):
    """The caller's, with where kolo and the caller's own modules are, and the service."""
    paths = [str(Path(__file__).resolve().parents[2])]
    if sys.path and sys.path[0]:
        paths.append(sys.path[0])
    if os.environ.get("PYTHONPATH"):
        paths.append(os.environ["PYTHONPATH"])
    return dict(os.environ, PYTHONPATH=os.pathsep.join(paths), **service.environment())


def _results(found, num_proc, min_num_proc):
    """The last attempt's results by rank: all num_proc of them, or (elastic) the first min_num_proc."""
    if not found:
        raise RuntimeError("kolo.run: the job ended without any rank's result")
    last = max(attempt for attempt, _ in found)
    by_rank = {rank: data for (attempt, rank), data in found.items() if attempt == last}
    expected = min_num_proc if min_num_proc is not None else num_proc
    missing = [r for r in range(expected) if r not in by_rank]
    if missing:
        raise RuntimeError("kolo.run: no result from rank%s %s" % ("s" if len(missing) > 1 else "",
                                                                   ", ".join(map(str, missing))))
    ranks = sorted(by_rank)[:expected] if min_num_proc is not None else sorted(by_rank)
    return [pickle.loads(by_rank[r]) for r in ranks]


def run(func, args=(), kwargs=None, num_proc=1, min_num_proc=None, max_num_proc=None, slots=None,
        reset_limit=None, cooldown_range=None, hosts=None, hostfile=None, host_discovery_script=None,
        start_timeout=None, ssh_port=None, ssh_identity_file=None, disable_cache=None, output_filename=None,
        verbose=None, use_gloo=None, use_mpi=None, mpi_args=None, network_interface=None, network_interfaces=None,
        executable=None, np=None, min_np=None, max_np=None):
    """Runs ``func(*args, **kwargs)`` on every rank of a job kolorun starts and returns its return values,
    a list indexed by rank (elastic, with ``min_num_proc``: the first ``min_num_proc``). The function
    and its arguments go to the ranks by value (cloudpickle), the results come back pickled, both over
    a TCP connection to this process that only the job's ranks can use. Raises RuntimeError, naming
    kolorun's exit status, when the job fails. Arguments: horovod.run's, each the kolorun option of the
    same name; ``executable`` runs the ranks (default: this Python)."""
    if network_interface:
        network_interfaces = network_interface.split(",")
        warnings.warn("network_interface is deprecated, use network_interfaces instead", DeprecationWarning)
    for old, new in (("np", "num_proc"), ("min_np", "min_num_proc"), ("max_np", "max_num_proc")):
        if locals()[old] is not None:
            warnings.warn("%s is deprecated, use %s instead" % (old, new), DeprecationWarning)
    num_proc = np if np is not None else num_proc
    min_num_proc = min_np if min_np is not None else min_num_proc
    max_num_proc = max_np if max_np is not None else max_num_proc
    if hosts is not None and hostfile is not None:
        raise ValueError("Argument hosts and hostfile only allow one provided.")
    if use_gloo and use_mpi:
        raise ValueError("Argument use_gloo and use_mpi only allow one set True.")
    function = _pickled(func, tuple(args), dict(kwargs or {}))
    command = [_kolorun()] + _options(num_proc, min_num_proc, max_num_proc, slots, reset_limit, cooldown_range,
                                      hosts, hostfile, host_discovery_script, start_timeout, ssh_port,
                                      ssh_identity_file, disable_cache, output_filename, verbose, use_gloo, use_mpi,
                                      mpi_args, network_interfaces)
    command += [executable or sys.executable, "-m", "kolo.runner.run_task"]
    service = _service.Service(function)
    try:
        status = subprocess.call(command, env=_environment(service))
    finally:
        service.close()
    if status != 0:
        raise RuntimeError("kolo.run: the job failed: kolorun exited with status %d (its output above says why)"
                           % status)
    return _results(service.results, num_proc, min_num_proc)
