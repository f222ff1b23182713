#!/usr/bin/env bash
# A batch from the command line: every instance file of a folder solved as jobs (the same
# store and executors as the server's), resumable, with a summary table. Run it from the
# repository root:
#
#     bash examples/batch.sh                      # 2 s per file
#     TIME_LIMIT=0.5 bash examples/batch.sh
#
# The folder holds two TSPLIB files and the known optimal tour of one of them: a known
# solution beside its instance (NAME.opt.tour, NAME.sol) gives that file a checked gap.
# Running it twice skips the files already solved with the same settings.
set -euo pipefail

TIME_LIMIT=${TIME_LIMIT:-2}
WORK=${WORK:-out/batch-example}
if [ -x .venv/bin/cosolve ]; then COSOLVE=.venv/bin/cosolve; else COSOLVE=cosolve; fi

mkdir -p "$WORK/in"
cp tests/data/eil51.tsp tests/data/berlin52.tsp tests/data/berlin52.opt.tour "$WORK/in/"

"$COSOLVE" batch "$WORK/in" --solver ortools --time-limit "$TIME_LIMIT" --workers 1 \
    --out "$WORK/out"
echo
echo "== $WORK/out holds one solution per file and the summary:"
ls "$WORK/out"
