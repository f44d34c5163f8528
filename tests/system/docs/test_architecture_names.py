"""docs/architecture.md names only files and folders that exist: each `name.cc`, `path/to/file.py` or `folder/`
in backticks is in the repository (a bare name anywhere in it), so that the map cannot point at code that moved
or went (issue 54). Files the build makes are named as such below."""
import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
MADE_BY_THE_BUILD = {"kolo/_build_info.py"}  # bindings/python/CMakeLists.txt writes it into build/python
NAME = re.compile(r"`([A-Za-z0-9_./-]+(?:\.(?:cc|h|py|sh|cmake|c|yaml|md)|/))`")


def tracked():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    folders = {str(Path(f).parent) for f in files}
    folders |= {str(p) for f in folders for p in Path(f).parents if str(p) != "."}
    return files, folders


def missing_names(text, files, folders):
    names = {os.path.basename(f) for f in files}
    out = []
    for n in sorted(set(NAME.findall(text)) - MADE_BY_THE_BUILD):
        m = n.rstrip("/")
        if n.endswith("/"):
            found = m in folders or any(d.endswith("/" + m) for d in folders)
        elif "/" in n:
            found = any(f == m or f.endswith("/" + m) for f in files)
        else:
            found = m in names
        if not found:
            out.append(n)
    return out


def test_every_file_and_folder_architecture_md_names_exists():
    files, folders = tracked()
    assert missing_names((ROOT / "docs" / "architecture.md").read_text(), files, folders) == []


def test_the_check_finds_a_name_that_does_not_exist():
    files, folders = tracked()
    text = "The hook is `kolo/torch/optimizer_hooks.py`, then `src/engine/` and `operations.cc` and `gone/`."
    assert missing_names(text, files, folders) == ["gone/", "kolo/torch/optimizer_hooks.py", "operations.cc"]
