#!/usr/bin/env bash
# One GPU call's work: every trainer continues from the committed checkpoints, in parallel,
# each cut by its own timeout so the whole call ends well inside the device tool's 10-minute
# limit; with FLOW=1 first the GPU half of benchmarks.flow_gpu. Everything is staged in $STAGE
# and comes back as $OUT/device_run.tgz.aa, .ab, … (the tool returns at most 8 files of
# 16 MiB): `cat device_run.tgz.* | tar xzf -` here. A checkpoint goes back into weights/ only
# when its run says it replaced the staged copy (a validation gain of at least 0.1 point, and
# for ReLD and PolyNet the fresh-instance gate); then refresh its MANIFEST.json entry and
# append the *.curve.csv rows to weights/curves/.
#
#   run: MINUTES=3.5 FLOW=1 bash training/device_run.sh   (OUT set by the device tool;
#        carry var/labels so that ReLD's TSP imitation need not make its labels there)
#
# FLOW=1 MINUTES=3.5 took about 200 s of flow benchmark and 300 s of training on one H200.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT to the folder that comes back}
MINUTES=${MINUTES:-4}
# each run's wall limit: its training minutes plus 150 s for loading, validations and saving
LIMIT=$(awk "BEGIN { print int($MINUTES * 60 + 150) }")
DEVICE=${DEVICE:-cuda}  # DEVICE=cpu runs the same commands on a CPU
STAGE=${STAGE:-/tmp/device_run}
mkdir -p "$STAGE/train" "$STAGE/repo"
# six trainers share the machine's cores: torch's default of one thread per core each would
# oversubscribe them
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} PYTHONUNBUFFERED=1
# The device machine cannot reach PyPI, but its image's python3 already holds everything the
# trainers and the flow benchmark's GPU half import (torch, numpy, numba, scipy, tqdm,
# networkx), so use it with the repository on PYTHONPATH. A local machine with the project's
# .venv uses that instead.
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
    | tee "$STAGE/env.txt"
nvidia-smi > "$STAGE/nvidia-smi.txt" 2>&1 || true
if [ "${FLOW:-0}" = 1 ]; then
  mkdir -p "$STAGE/flow"
  timeout 200 "$PY" -m benchmarks.flow_gpu device --out "$STAGE/flow" --device "$DEVICE" \
      > "$STAGE/flow/log.txt" 2>&1
  echo "flow benchmark: exit $? (124: cut at 200 s; what finished is in flow_gpu.json)"
fi
T="$STAGE/train"
# ReLD. TSP: imitation of near-optimal ils labels (var/labels/, carried or made here by
# training/make_labels.sh, 16 cores: about a minute), lr 1e-5 after a warm-up. REINFORCE at the
# earlier default lr 1e-4 cost +2.2% on fresh TSP100 instances in 20 steps (at 1e-5: +0.16%, not
# significant; docs/neural-solvers.md), so it runs beside the shipped lineage
# (reld_tsp_rl.pt) at 1e-5 with a warm-up, to show whether a long run gets past the first
# collapse of the sampled spread. CVRP: REINFORCE continues its lineage (5.9% -> 3.25%).
if ! ls var/labels/tsp100_ils_s49*.npz > /dev/null 2>&1; then
  PY="$PY" TSP_CHUNKS=4 CVRP_CHUNKS=0 WORKERS=12 bash training/make_labels.sh \
      > "$STAGE/labels.log" 2>&1
fi
TSP_LABELS=$(ls var/labels/tsp100_ils_s49*.npz | paste -sd, -)
for f in reld_tsp reld_cvrp; do
  if [ -f "weights/$f.pt" ]; then cp "weights/$f.pt" "$T/"; fi
done
cp "$T/reld_tsp.pt" "$T/reld_tsp_rl.pt" 2>/dev/null || true
for spec in "tsp reld_tsp --phase imitation --labels $TSP_LABELS --lr 1e-5 --starts 16" \
            "tsp reld_tsp_rl --phase reinforce --lr 1e-5 --starts 100" \
            "cvrp reld_cvrp --phase reinforce --lr 1e-5 --starts 100"; do
  read -r problem name flags <<< "$spec"
  # shellcheck disable=SC2086  # the flags are meant to split
  timeout "$LIMIT" "$PY" -m training.reld "$problem" $flags --warmup-steps 200 \
      --minutes "$MINUTES" --eval-minutes 2 --batch 64 --device "$DEVICE" --out "$T/$name.pt" \
      > "$T/train_${name}.log" 2>&1 &
done
# PolyNet: best-of-K on the strategy block, continuing the committed checkpoint (copied to the
# stage, where the run resumes from it and writes its best and its curve); the settings are
# those of the runs that last moved each validation (MANIFEST.json's last_run; TSP with the
# parent frozen).
for spec in "tsp --lr 0 --poly-lr 1e-4" "cvrp --lr 3e-6 --poly-lr 3e-5" \
            "cvrptw --lr 3e-6 --poly-lr 3e-5 --solomon-share 0.5"; do
  problem=${spec%% *}
  if [ -f "weights/polynet_${problem}.pt" ]; then cp "weights/polynet_${problem}.pt" "$T/"; fi
  # shellcheck disable=SC2086  # the flags in $spec are meant to split
  timeout "$LIMIT" "$PY" -m training.polynet $spec --phase best_of_k --minutes "$MINUTES" \
      --eval-minutes 2 --batch 64 --device "$DEVICE" --out "$T/polynet_${problem}.pt" \
      > "$T/train_polynet_${problem}.log" 2>&1 &
done
# reld's CVRPTW model: the one-strategy PolyNet, continued on its own checkpoint
if [ -f weights/reld_cvrptw.pt ]; then cp weights/reld_cvrptw.pt "$T/"; fi
timeout "$LIMIT" "$PY" -m training.polynet cvrptw --single --trajectories 16 --phase pomo \
    --lr 3e-6 --poly-lr 3e-6 --solomon-share 0.5 --minutes "$MINUTES" --eval-minutes 2 \
    --batch 64 --device "$DEVICE" --out "$T/reld_cvrptw.pt" \
    > "$T/train_reld_cvrptw.log" 2>&1 &
# SIL (Self-Improved Training): continues var/checkpoints/sil_tsp.last.pt when carried,
# else the committed weights/sil_tsp.pt; writes weights/ itself when validation gains 0.1 point.
timeout "$LIMIT" "$PY" -m training.sit tsp --minutes "$MINUTES" --eval-minutes 2 --label-minutes 3 \
    --tokens 65536 --device "$DEVICE" > "$T/train_sil_tsp.log" 2>&1 &
# GOODRL (CPU: its simulator sets the pace): continues var/checkpoints/goodrl.pt when carried,
# else the committed weights/goodrl.pt; writes weights/ itself when its score gains 0.1 point.
timeout "$LIMIT" "$PY" -m training.goodrl --minutes "$MINUTES" > "$T/train_goodrl.log" 2>&1 &
wait
cp weights/sil_tsp.pt weights/goodrl.pt weights/MANIFEST.json "$STAGE/repo/" 2>/dev/null || true
cp -r weights/curves var/checkpoints "$STAGE/repo/" 2>/dev/null || true
for f in "$T"/train_*.log; do echo "== $f"; tail -n 4 "$f"; done
# the ReLD/PolyNet *.last.pt hold optimizer state (17 MB each) and are not needed to continue:
# the next call resumes from the committed weights; SIL's holds its SIT labels and stays
tar czf - -C "$STAGE" --exclude='.*.lock' --exclude='reld_*.last.pt' \
    --exclude='polynet_*.last.pt' . | split -b 15m - "$OUT/device_run.tgz."
ls -la "$OUT"
