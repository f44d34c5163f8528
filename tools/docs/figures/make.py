"""Writes the documentation's figures, docs/img/*.svg, from the benchmark results and the diagrams' code.

    python3 tools/docs/figures/make.py            # (re)write every figure into docs/img
    python3 tools/docs/figures/make.py --check    # exit 1, naming each figure that differs or is missing

The figures are SVG written by hand (svg.py), so the same inputs give the same bytes on any machine and
--check can compare them byte for byte; tools/docs/build.sh runs it, so CI fails when a committed figure
is not what its data and code make. Python's standard library only.
"""
import argparse
import importlib
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sources import ROOT  # noqa: E402

# One module per figure, each with NAME (docs/img/NAME.svg) and draw() -> the SVG's text.
MODULES = ["scaling_measured", "scaling_projected", "overlap", "timeline", "gradient_flow", "hierarchical",
           "elastic_cycle", "zero_shards", "worlds", "ddp_on_kolo"]
OUT = ROOT / "docs" / "img"


def figures():
    """{file name: SVG text}, in a fixed order."""
    made = {}
    for name in MODULES:
        module = importlib.import_module(name)
        made[module.NAME + ".svg"] = module.draw()
    return dict(sorted(made.items()))


def write(folder, made):
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in made.items():
        (folder / name).write_bytes(text.encode("utf-8"))


def shown(path):
    """A path as a message names it: from the repository's root where it lies inside it."""
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def check(out, made):
    """The figures of `out` that differ from `made`, or are missing from it, or that nothing makes."""
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        write(Path(tmp), made)  # what a rerun would write, byte for byte
        for name in made:
            fresh = (Path(tmp) / name).read_bytes()
            committed = out / name
            if not committed.exists():
                problems.append("%s is missing" % shown(committed))
            elif committed.read_bytes() != fresh:
                problems.append("%s differs from what the script makes" % shown(committed))
    for stale in sorted(out.glob("*.svg")):
        if stale.name not in made:
            problems.append("%s is made by no figure module" % shown(stale))
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare docs/img with what would be written")
    parser.add_argument("--out", default=str(OUT), help="the folder of the figures (default docs/img)")
    args = parser.parse_args()
    out = Path(args.out).resolve()
    made = figures()
    if args.check:
        problems = check(out, made)
        for p in problems:
            print("figure check: %s" % p, file=sys.stderr)
        if problems:
            print("figure check: run `python3 tools/docs/figures/make.py` and commit docs/img", file=sys.stderr)
            return 1
        print("figure check: %d figures in %s are as tools/docs/figures makes them" % (len(made), args.out))
        return 0
    write(out, made)
    print("wrote %d figures into %s" % (len(made), out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
