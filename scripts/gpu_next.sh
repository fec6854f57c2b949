#!/usr/bin/env bash
# The next GPU step (issue 36, item 4), one device call of at most 9 minutes on one GPU:
#  (a) random-qk/qkv at 3,750 and 5,000 steps and learned-qk/qkv at 3,125 and 3,750 (gpu preset, seed 0, each its
#      own cosine schedule; simulations/transformer/c6/gpu_next.py BUDGETS), 8 processes on the GPU at once, each with a
#      training-time guard (--time-limit) and a hard timeout; each evaluated 1x..256x on the author's windows;
#  (b) beside them, every stylized check on the CuPy backend (defaults, to a temporary folder), then its rows
#      compared in distribution with the committed CPU rows (gpu_next.py agreement);
#  (c) the gaps per budget and length beside the committed 2,500-step run and the paper (gpu_next.py render).
# Everything lands in $OUT (trend.md/json/png, agreement.json, logs, one archive of the runs).
#   bash scripts/gpu_next.sh            (on the GPU machine, from the repository root)
#   bash scripts/gpu_next.sh --tiny     (CPU dry run: smoke preset, 12 and 16 steps, no CuPy; about 2 min)
# Knobs: PY, GPU_TRAIN_SECONDS (training guard per run, default 330), GPU_GUARD_SECONDS (hard timeout, default 480),
# CHECKS_SECONDS (CuPy checks, default 300), GPU_THREADS (torch CPU threads per run, default 1).
set -uo pipefail
cd "$(dirname "$0")/.."
TINY=0
if [[ "${1:-}" == "--tiny" ]]; then TINY=1; fi
if [[ $TINY == 1 && -z "${PY:-}" && -x .venv/bin/python ]]; then PY=.venv/bin/python; fi
PY=${PY:-python3}
export NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-/tmp/numba_cache}
DEST=${OUT:-./gpu_next_results}
mkdir -p "$DEST"
RUNS=$(mktemp -d)
CKPTS=$(mktemp -d)
if [[ $TINY == 1 ]]; then
  PRESET=smoke; BUDGET=60; GUARD=150; EXTRA=(--device cpu --threads 1)
  export OMP_NUM_THREADS=1 STYLIZED_ROTATION_KERNELS=0
else
  PRESET=gpu; BUDGET=${GPU_TRAIN_SECONDS:-330}; GUARD=${GPU_GUARD_SECONDS:-480}; EXTRA=(--threads "${GPU_THREADS:-1}")
  export OMP_NUM_THREADS=${GPU_THREADS:-1}
  $PY -c "import stylized" 2>/dev/null || $PY -m pip install -q --no-deps --no-build-isolation -e .
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > "$DEST/env.txt" 2>&1 || true
fi
PLAN=$($PY -m simulations.transformer.c6.gpu_next plan $([[ $TINY == 1 ]] && echo --tiny)) || { echo "plan failed"; exit 3; }
declare -a PIDS NAMES
while read -r v s; do
  [[ -z "$v" ]] && continue
  timeout -k 10 "$GUARD" $PY -m simulations.transformer.train.distributed --variant "$v" --preset "$PRESET" --seed 0 \
    --steps "$s" --ckpt "$CKPTS/checkpoints/$PRESET/$v-$s.pt" --force --time-limit "$BUDGET" --eval \
    --out "$RUNS/$v-$s.json" "${EXTRA[@]}" > "$RUNS/$v-$s.log" 2>&1 &
  PIDS+=($!); NAMES+=("$v-$s")
done <<< "$PLAN"
CHECKS_PID=""
if [[ $TINY == 0 ]]; then
  (
    GPU_RES=$(mktemp -d)
    STYLIZED_RESULTS_DIR=$GPU_RES STYLIZED_FIGURES_DIR=$(mktemp -d) STYLIZED_PAPER_CHECKS=$(mktemp) \
      timeout "${CHECKS_SECONDS:-300}" $PY -m stylized check --all --force --all-backend cupy \
      || echo "check --all on cupy: FAILED or timed out (the rows it wrote are still compared)"
    $PY -m simulations.transformer.c6.gpu_next agreement simulations/results "$GPU_RES" "$DEST"
  ) > "$DEST/gpu_checks.log" 2>&1 &
  CHECKS_PID=$!
fi
FAILED=""
for i in "${!PIDS[@]}"; do
  if ! wait "${PIDS[$i]}"; then FAILED="$FAILED ${NAMES[$i]}"; fi
done
mkdir -p "$RUNS/eval"
cp "$CKPTS"/eval/"$PRESET"/*.json "$RUNS/eval/" 2>/dev/null || true
$PY -m simulations.transformer.c6.gpu_next render "$RUNS" "$DEST" --committed simulations/results > "$DEST/trend.log" 2>&1 \
  || echo "render failed (see trend.log)"
if [[ -n "$CHECKS_PID" ]]; then wait "$CHECKS_PID" || true; fi
tar czf "$DEST/gpu_next_runs.tgz" -C "$RUNS" . 2>/dev/null || true
rm -rf "$CKPTS"
cat "$DEST/trend.log"; tail -n 25 "$DEST/gpu_checks.log" 2>/dev/null || true
if [[ -n "$FAILED" ]]; then echo "runs failed or timed out:$FAILED (see their logs in gpu_next_runs.tgz)"; exit 1; fi
echo "gpu_next: all runs done; results in $DEST"
