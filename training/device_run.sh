#!/usr/bin/env bash
# One GPU session's training: every model that needs more training, in parallel, resuming from
# the committed checkpoints, each stopping well inside the device tool's 10-minute call limit.
# Checkpoints and learning curves go to $OUT; copy a checkpoint back into weights/ (and run
# `python -m training.reld <problem> --minutes 0` locally to refresh MANIFEST.json) only when
# its validation gap is better than the committed one.
#
#   run: bash training/device_run.sh      (with OUT set by the device tool)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT to the folder that comes back}
MINUTES=${MINUTES:-7}
DEVICE=${DEVICE:-cuda}  # DEVICE=cpu runs the same commands on a CPU
# The device machine cannot reach PyPI, but its image's python3 already holds everything the
# trainers import (torch, numpy, numba, scipy, tqdm; checked with `python -c "import sys,
# training.sit; print(sys.modules)"`), so use it with the repository on PYTHONPATH. A local
# machine with the project's .venv uses that instead.
if python3 -c "import torch, numpy, numba, scipy, tqdm" 2>/dev/null; then
  PY=python3
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
elif [ -x .venv/bin/python ]; then
  PY=.venv/bin/python
else
  echo "no Python with torch, numpy, numba, scipy and tqdm found" >&2
  exit 1
fi
"$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())" \
    | tee "$OUT/env.txt"
for problem in tsp cvrp; do
  if [ -f "weights/reld_${problem}.pt" ]; then cp "weights/reld_${problem}.pt" "$OUT/"; fi
  "$PY" -m training.reld "$problem" --phase reinforce --minutes "$MINUTES" --eval-minutes 2 \
      --batch 64 --starts 100 --device "$DEVICE" --out "$OUT/reld_${problem}.pt" \
      > "$OUT/train_reld_${problem}.log" 2>&1 &
done
# PolyNet: best-of-K on the strategy block, continuing the committed checkpoint (copied to $OUT,
# where the run resumes from it and writes its best and its curve); the settings are those of
# the CPU runs that last moved each validation (TSP and CVRP with the ReLD parent frozen).
for spec in "tsp --lr 0 --poly-lr 1e-4" "cvrp --lr 0 --poly-lr 3e-5" \
            "cvrptw --lr 2e-6 --poly-lr 2e-5"; do
  problem=${spec%% *}
  if [ -f "weights/polynet_${problem}.pt" ]; then cp "weights/polynet_${problem}.pt" "$OUT/"; fi
  # shellcheck disable=SC2086  # the flags in $spec are meant to split
  "$PY" -m training.polynet $spec --phase best_of_k --minutes "$MINUTES" --eval-minutes 2 \
      --batch 64 --device "$DEVICE" --out "$OUT/polynet_${problem}.pt" \
      > "$OUT/train_polynet_${problem}.log" 2>&1 &
done
# SIL (Self-Improved Training): continues var/checkpoints/sil_tsp.last.pt when carried,
# else the committed weights/sil_tsp.pt; its best checkpoint, manifest and curve come back.
"$PY" -m training.sit tsp --minutes "$MINUTES" --eval-minutes 2 --label-minutes 3 \
    --tokens 65536 --device "$DEVICE" > "$OUT/train_sil_tsp.log" 2>&1 &
wait
cp weights/sil_tsp.pt weights/MANIFEST.json weights/curves/sil_tsp.csv "$OUT/" 2>/dev/null || true
cp var/checkpoints/sil_tsp.last.pt "$OUT/" 2>/dev/null || true
nvidia-smi --query-gpu=name,memory.used --format=csv > "$OUT/gpu.txt" || true
