"""Where the figures' data are, and the benchmark code they reuse (imported, never copied)."""
import importlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
BENCHMARKS = ROOT / "benchmarks"
RESULTS = BENCHMARKS / "results"


def benchmark_module(name):
    """A module of benchmarks/ (standard library at import). Appended to the path, not put first, so that
    it cannot shadow this package's modules."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.append(str(BENCHMARKS))
    return importlib.import_module(name)


def scaling_report():
    return benchmark_module("scaling_report")


def timeline_overlap():
    return benchmark_module("timeline_overlap")
