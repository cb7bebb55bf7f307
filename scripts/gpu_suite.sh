#!/usr/bin/env bash
# The whole test suite on a GPU machine that has PyTorch with CUDA but cannot reach a package index
# (a university cluster node, say). Two steps, from the repository root:
#
#   1. Where there is internet, for the node's Python and platform:
#        scripts/gpu_suite.sh wheelhouse DIR [pip download options]
#      downloads every dependency of the course and its tests except torch into DIR. Run it with
#      the same Python version and OS as the node, or pass e.g.
#      `--python-version 3.10 --platform manylinux2014_x86_64 --only-binary=:all:`.
#   2. On the node, with the python that has torch (copy DIR and the repository there):
#        scripts/gpu_suite.sh run DIR [pytest options]
#      makes a virtualenv (.venv-gpu) that sees the node's torch, installs the rest from DIR
#      only (--no-index), and runs `python -m pytest` with COURSE_REQUIRE_ACCELERATOR=1, so the
#      run fails rather than silently testing nothing when PyTorch sees no GPU. The browser tests
#      need Chromium; without it, add `-m "not browser"`.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -ge 2 ] || usage
verb=$1 dir=$2
shift 2

deps() {   # requirements.txt and requirements-dev.txt without torch (the node has its own), without the
           # course itself and without the include of the one by the other
  cat requirements.txt requirements-dev.txt | grep -v -E '^[[:space:]]*(torch([<>=!~ ;#]|$)|-e[[:space:]]|-r[[:space:]])' 
  echo "setuptools>=77"   # builds course_utils (pyproject.toml) without an index
}

case $verb in
  wheelhouse)
    mkdir -p "$dir"
    python3 -m pip download -d "$dir" "$@" -r <(deps)
    echo "Wheelhouse ready: $(ls "$dir" | wc -l) files in $dir"
    ;;
  run)
    python3 -c "import torch; print('node torch', torch.__version__, '| CUDA', torch.version.cuda)"
    rm -rf .venv-gpu
    python3 -m venv --system-site-packages .venv-gpu
    # shellcheck disable=SC1091
    . .venv-gpu/bin/activate
    python -m pip install -q --no-index --find-links "$dir" -r <(deps)
    python -m pip install -q --no-index --find-links "$dir" --no-build-isolation --no-deps -e .
    export COURSE_REQUIRE_ACCELERATOR="${COURSE_REQUIRE_ACCELERATOR:-1}"
    python -m pytest "$@"
    ;;
  *) usage ;;
esac
