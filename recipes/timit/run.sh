#!/bin/sh
# TIMIT alignment recipe: every trainer of the learning core on one corpus.
#   recipes/timit/run.sh CORPUS_DIR OUT_DIR [--quick] [--seeds N] ...   (see recipes/timit/README.md)
set -e
repo_root=$(cd "$(dirname "$0")/../.." && pwd)
PYTHONPATH="$repo_root${PYTHONPATH:+:$PYTHONPATH}" exec "${PYTHON:-python}" -m recipes.timit "$@"
