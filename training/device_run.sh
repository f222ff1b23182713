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
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
  .venv/bin/pip install --quiet torch==2.13.0 -e .
fi
PY=.venv/bin/python
for problem in tsp cvrp; do
  if [ -f "weights/reld_${problem}.pt" ]; then cp "weights/reld_${problem}.pt" "$OUT/"; fi
  "$PY" -m training.reld "$problem" --phase reinforce --minutes "$MINUTES" --eval-minutes 2 \
      --batch 64 --starts 100 --device cuda --out "$OUT/reld_${problem}.pt" \
      > "$OUT/train_reld_${problem}.log" 2>&1 &
done
# SIL (Self-Improved Training): continues var/checkpoints/sil_tsp.last.pt when carried,
# else the committed weights/sil_tsp.pt; its best checkpoint, manifest and curve come back.
"$PY" -m training.sit tsp --minutes "$MINUTES" --eval-minutes 2 --label-minutes 3 \
    --tokens 65536 --device cuda > "$OUT/train_sil_tsp.log" 2>&1 &
wait
cp weights/sil_tsp.pt weights/MANIFEST.json weights/curves/sil_tsp.csv "$OUT/" 2>/dev/null || true
cp var/checkpoints/sil_tsp.last.pt "$OUT/" 2>/dev/null || true
nvidia-smi --query-gpu=name,memory.used --format=csv > "$OUT/gpu.txt" || true
