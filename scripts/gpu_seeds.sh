#!/usr/bin/env bash
# More seeds of the gpu-preset comparison in one device call: two instances of scripts/gpu_check.sh
# --transformer-only at once (seed A's variants and seed B's), then one archive of ./gpu_results in $OUT.
#   SEED_A=1 VARIANTS_A="rope nope alibi random-qk random-qkv" SEED_B=2 VARIANTS_B="learned-qk learned-qkv" \
#     bash scripts/gpu_seeds.sh            (GPU_TRAIN_SECONDS, GPU_GUARD_SECONDS, GPU_THREADS pass through)
#   bash scripts/gpu_seeds.sh --dry-run    (CPU plumbing check: the smoke preset, results in $OUT or ./gpu_results)
# Copy each transformer_gpu-s<k>/ into simulations/results/transformer/gpu/seed<k>/ (the gpu report pools them).
set -uo pipefail
cd "$(dirname "$0")/.."
MODE=--transformer-only
if [[ "${1:-}" == "--dry-run" ]]; then MODE=--dry-run; fi
export GPU_THREADS=${GPU_THREADS:-1}
DEST=${OUT:-}
mkdir -p gpu_results
OUT= GPU_SEED=${SEED_A:-1} VARIANTS=${VARIANTS_A:-"rope nope alibi random-qk random-qkv"} \
  bash scripts/gpu_check.sh $MODE > gpu_results/seed_a.log 2>&1 &
A=$!
OUT= GPU_SEED=${SEED_B:-2} VARIANTS=${VARIANTS_B:-"learned-qk learned-qkv random-qk random-qkv"} \
  bash scripts/gpu_check.sh $MODE > gpu_results/seed_b.log 2>&1
RB=$?
wait $A; RA=$?
tail -n 30 gpu_results/seed_a.log gpu_results/seed_b.log
if [[ -n "$DEST" && $MODE != --dry-run ]]; then
  tar czf "$DEST/gpu_check.tgz" -C gpu_results . && cat gpu_results/*/summary.md > "$DEST/summary.md" 2>/dev/null
fi
echo "seed A exit $RA, seed B exit $RB"
exit $(( RA || RB ))
