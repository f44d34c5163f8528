"""containers/*.Dockerfile against the tree, without a Docker engine: every path a COPY takes from the build
context exists and gets past .dockerignore (and so does everything `pip install` of the copied tree needs:
pyproject.toml's readme and license files, the folders CMakeLists.txt always builds), the KOLO_* build
variables they set are ones pyproject.toml reads, the source tree is copied where `pip install` installs it
from, and the image's command runs a file the image has. docs/containers.md builds and runs the images;
tools/containers/try_cpu_dockerfile.sh does so for the CPU one, with an engine (minutes, not in CI).

    /usr/bin/python3 -m pytest -q tests/system/containers        (ctest: containers_static)
"""
import fnmatch
import json
import re
import shlex
from pathlib import Path, PurePosixPath

import pytest

ROOT = Path(__file__).resolve().parents[3]
DOCKERFILES = sorted((ROOT / "containers").glob("*.Dockerfile"))
PAGE = ROOT / "docs" / "containers.md"


def instructions(path):
    """(INSTRUCTION, arguments) for each instruction of a Dockerfile, continuation lines joined."""
    out, pending = [], ""
    for line in path.read_text().splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.lstrip().startswith("#"):  # a comment inside a continued instruction
            continue
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        word, _, rest = pending.strip().partition(" ")
        out.append((word.upper(), rest.strip()))
        pending = ""
    assert not pending, "%s ends inside a continued line" % path.name
    return out


def ignore_patterns():
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    return [l.strip() for l in lines if l.strip() and not l.lstrip().startswith("#")]


def sent(relative):
    """Whether .dockerignore lets `relative` (a path in the tree) into the build context: the last pattern
    that matches it or a folder above it decides, a `!` one letting it in (Docker's rule)."""
    parts = PurePosixPath(relative).parts
    verdict = True
    for pattern in ignore_patterns():
        negated = pattern.startswith("!")
        pattern = pattern.lstrip("!").strip("/")
        for n in range(1, len(parts) + 1):
            prefix = "/".join(parts[:n])
            if fnmatch.fnmatchcase(prefix, pattern) or (
                    pattern.startswith("**/") and fnmatch.fnmatchcase(parts[n - 1], pattern[3:])):
                verdict = negated
                break
    return verdict


def stages(path):
    """Each stage's instructions, in order."""
    out = []
    for word, rest in instructions(path):
        if word == "FROM":
            out.append([])
        if out:
            out[-1].append((word, rest))
    return out


def copies(path):
    """(sources, destination, workdir) of each COPY from the build context (not --from another stage)."""
    out = []
    for stage in stages(path):
        workdir = "/"
        for word, rest in stage:
            if word == "WORKDIR":
                workdir = str(PurePosixPath(workdir) / rest)
            if word == "COPY" and not rest.startswith("--from"):
                *sources, destination = shlex.split(rest)
                out.append((sources, destination, workdir))
    return out


def test_there_are_dockerfiles():
    assert [p.name for p in DOCKERFILES] == ["cpu.Dockerfile", "gpu.Dockerfile"]


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_copied_paths_exist_and_are_sent(dockerfile):
    for sources, _, _ in copies(dockerfile):
        for source in sources:
            assert (ROOT / source).exists(), "%s copies %s, which the tree lacks" % (dockerfile.name, source)
            assert source == "." or sent(source), "%s copies %s, which .dockerignore leaves out" % (
                dockerfile.name, source)


def test_what_pip_install_needs_is_sent():
    pyproject = (ROOT / "pyproject.toml").read_text()
    needed = ["pyproject.toml", "CMakeLists.txt"]
    needed += re.findall(r'^readme = "([^"]+)"', pyproject, re.M)
    needed += re.findall(r'"([^"]+)"', re.search(r"^license-files = \[(.*)\]", pyproject, re.M).group(1))
    cmake = (ROOT / "CMakeLists.txt").read_text()
    # What the top CMakeLists.txt builds or includes, less what pyproject.toml turns off (tests, benchmarks).
    needed += re.findall(r"^\s*add_subdirectory\(([^)\s]+)\)", cmake, re.M)
    needed += re.findall(r"^\s*include\(\$\{PROJECT_SOURCE_DIR\}/([^)\s]+)\)", cmake, re.M)
    needed = [n for n in needed if not n.startswith(("tests", "benchmarks"))]
    assert "src" in needed and "bindings/python" in needed and "README.md" in needed
    for path in needed:
        assert (ROOT / path).exists(), path
        assert sent(path), ".dockerignore leaves out %s, which pip install needs" % path
    for path in ["build", "build/CMakeCache.txt", ".git", ".venv", "docs", "tests"]:
        assert not sent(path), ".dockerignore lets %s into the build context" % path


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_pip_installs_the_copied_tree(dockerfile):
    tree = [destination for sources, destination, _ in copies(dockerfile) if sources == ["."]]
    assert len(tree) == 1, "%s should copy the source tree once" % dockerfile.name
    runs = [rest for word, rest in instructions(dockerfile) if word == "RUN" and "pip install" in rest]
    installs = [r for r in runs if re.search(r"pip install\b[^&]*\s%s(\s|$)" % re.escape(tree[0]), r)]
    assert installs, "%s never pip-installs %s, where it copies the tree" % (dockerfile.name, tree[0])


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_build_variables_are_ones_pip_reads(dockerfile):
    read = set(re.findall(r'env = "(KOLO_[A-Z_]+)"', (ROOT / "pyproject.toml").read_text()))
    install = next(rest for word, rest in instructions(dockerfile) if word == "RUN" and "/src/kolo" in rest)
    given = set(re.findall(r"\b(KOLO_[A-Z_]+)=", install))
    assert given, "%s sets no KOLO_* build variable" % dockerfile.name
    assert given <= read, "%s sets %s, which pyproject.toml does not read" % (dockerfile.name, given - read)


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_command_runs_a_file_the_image_has(dockerfile):
    final = stages(dockerfile)[-1]
    cmd = [rest for word, rest in final if word == "CMD"]
    assert len(cmd) == 1, "%s's image should have one CMD" % dockerfile.name
    argv = json.loads(cmd[0])
    assert argv[0] == "kolorun"
    scripts = [a for a in argv if a.endswith(".py")]
    copied = {}
    for sources, destination, workdir in copies(dockerfile):
        if len(sources) == 1 and sources[0] != ".":
            copied[str(PurePosixPath(workdir) / destination)] = sources[0]
    workdir = [rest for word, rest in final if word == "WORKDIR"][-1]
    for script in scripts:
        in_image = PurePosixPath(workdir) / script
        in_tree = [ROOT / src / in_image.relative_to(dst) for dst, src in copied.items()
                   if in_image.is_relative_to(dst)]
        assert in_tree, "%s's command runs %s, which no COPY of its last stage puts there" % (dockerfile.name, in_image)
        assert in_tree[0].is_file(), "%s's command runs %s, which the tree lacks" % (dockerfile.name, in_tree[0])


def test_the_page_builds_these_files():
    page = PAGE.read_text()
    named = set(re.findall(r"docker build -f (containers/[\w.]+)", page))
    assert named == {str(p.relative_to(ROOT)) for p in DOCKERFILES}
    for script in re.findall(r"sh (tools/containers/[\w.]+\.sh)", page):
        assert (ROOT / script).is_file(), script
