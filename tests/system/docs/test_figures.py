"""The documentation's figures (tools/docs/figures/make.py): the committed ones are what the script makes,
the script makes the same bytes every run, and --check fails, naming the figure and the command to rerun,
when one differs or is missing. tools/docs/build.sh runs --check in CI; this shows that it can fail."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
MAKE = ROOT / "tools" / "docs" / "figures" / "make.py"
IMG = ROOT / "docs" / "img"


def make(*args, seed="0"):
    env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, str(MAKE), *args], capture_output=True, text=True, env=env, timeout=120)


def committed_copy(tmp_path):
    out = tmp_path / "img"
    shutil.copytree(IMG, out)
    return out


def test_the_committed_figures_are_what_the_script_makes():
    job = make("--check")
    assert job.returncode == 0, job.stderr


def test_two_runs_write_the_same_bytes(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert make("--out", str(a), seed="1").returncode == 0
    assert make("--out", str(b), seed="2").returncode == 0
    names = sorted(p.name for p in a.iterdir())
    assert names == sorted(p.name for p in b.iterdir()) and names
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_check_fails_naming_a_figure_that_differs(tmp_path):
    out = committed_copy(tmp_path)
    figure = out / "scaling-measured.svg"
    figure.write_text(figure.read_text().replace("</svg>", "<!-- edited by hand --></svg>"))
    job = make("--check", "--out", str(out))
    assert job.returncode == 1
    assert "scaling-measured.svg differs" in job.stderr
    assert "python3 tools/docs/figures/make.py" in job.stderr
    assert "gradient-flow.svg" not in job.stderr  # only the one that differs is named


def test_check_fails_naming_a_missing_figure_and_one_nothing_makes(tmp_path):
    out = committed_copy(tmp_path)
    (out / "zero-shards.svg").unlink()
    (out / "old-figure.svg").write_text("<svg/>")
    job = make("--check", "--out", str(out))
    assert job.returncode == 1
    assert "zero-shards.svg is missing" in job.stderr
    assert "old-figure.svg is made by no figure module" in job.stderr


def test_check_fails_when_the_data_changed(tmp_path, monkeypatch):
    """New benchmark results without a rerun: the figure drawn from them no longer matches."""
    sys.path.insert(0, str(MAKE.parent))
    try:
        import make as figures_make
        import sources
        results = tmp_path / "results"
        shutil.copytree(sources.RESULTS, results)
        data = (results / "scaling_measured.json").read_text()
        (results / "scaling_measured.json").write_text(data.replace('"seconds": 0.200135', '"seconds": 0.300135', 1))
        monkeypatch.setattr(sources, "RESULTS", results)
        import scaling_measured
        monkeypatch.setattr(scaling_measured, "RESULTS", results)
        problems = figures_make.check(IMG, figures_make.figures())
    finally:
        sys.path.remove(str(MAKE.parent))
    assert problems == ["docs/img/scaling-measured.svg differs from what the script makes"]
