#!/bin/sh
# Builds the documentation site (docs/, mkdocs.yml) into build-docs/site, strictly: a broken link, an
# anchor that does not exist, a page missing from the nav or a file outside docs/ that a page links to
# and the repository lacks fails the build. The tools (docs/requirements.txt, pinned) go into a virtual
# environment of their own, build-docs/venv, made once and reinstalled only when the requirements change.
# Before mkdocs runs, the figures are checked against their script (tools/docs/figures/make.py --check).
# Usage: tools/docs/build.sh [more mkdocs build options]     (serve: build-docs/venv/bin/mkdocs serve)
set -eu
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-/usr/bin/python3}
VENV=build-docs/venv
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
if ! cmp -s docs/requirements.txt "$VENV/requirements.txt"; then
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -r docs/requirements.txt
  cp docs/requirements.txt "$VENV/requirements.txt"
fi
# The figures (docs/img/*.svg) must be what tools/docs/figures makes from the benchmark results: fail
# first, naming each that differs, rather than publish a stale one.
"$PYTHON" tools/docs/figures/make.py --check
NO_MKDOCS_2_WARNING=1 "$VENV/bin/mkdocs" build --strict --clean -d build-docs/site "$@"
