#!/usr/bin/env bash
# GPU check on one GPU machine, sized for one device call of under 9 minutes: the GPU/CPU sweep benchmark (alone,
# so the CPU side has every core), then at the same time (a) the CuPy tests, every Monte Carlo check with
# --backend cupy and a short transformer step on CUDA, and (b) the transformer comparison: the 8 main variants
# (rope nope alibi random-qk random-qkv learned-qk learned-qkv path) trained as concurrent processes on the one GPU
# under the "gpu" preset (6 x 384, context 256, up to 2,500 steps, bf16), each evaluated 1x..256x (65,536 tokens,
# the author's 20 random windows per length), with a wall-clock guard (`timeout`, and --time-limit inside each
# run); each run writes its JSON after training and after every evaluated length, so a guard keeps what finished.
#   bash scripts/gpu_check.sh               (from the repository root; results in ./gpu_results, packed into $OUT)
#   bash scripts/gpu_check.sh --smoke       (≈ 1 minute: every variant trains 40 steps on CUDA and runs one
#                                            65,536-token forward, all at once; times, peak memory, failures)
#   bash scripts/gpu_check.sh --transformer-only   (only the 8-variant comparison)
#   bash scripts/gpu_check.sh --dry-run     (CPU: skips the GPU checks; smoke preset, < 60 s)
# Knobs: PY, GPU_TRAIN_SECONDS (training budget per variant, default 240), GPU_GUARD_SECONDS (hard
# timeout per variant, default 420), GPU_SEED (training seed, default 0; results in transformer_gpu-sN), GPU_COMPILE=1
# (torch.compile), GPU_THREADS (torch CPU threads per run, default 2; 1 when more than 8 runs share the 16 cores),
# VARIANTS (space separated).  Two seeds in one call: run the script twice at once with OUT= (no packing), then pack
# ./gpu_results yourself (scripts/gpu_seeds.sh).
# With $OUT set (the device tool), everything is packed into $OUT/gpu_check.tgz plus $OUT/summary.md, since only
# eight files come back from a device call.
# The GPU machine has no package registry and no network: its python3 already holds numpy, scipy, numba,
# cupy, matplotlib, seaborn, tqdm, pytest and hypothesis, so the package is imported from the checkout (or
# installed without dependencies); the corpus is the builtin one (the standard library's source), bytes.
set -euo pipefail
cd "$(dirname "$0")/.."
DRY=0; CHECKS=1; SMOKE=0
if [[ "${1:-}" == "--dry-run" ]]; then DRY=1; CHECKS=0; fi
if [[ "${1:-}" == "--transformer-only" ]]; then CHECKS=0; fi
if [[ "${1:-}" == "--smoke" ]]; then SMOKE=1; fi
if [[ $DRY == 1 && -z "${PY:-}" && -x .venv/bin/python ]]; then PY=.venv/bin/python; fi
PY=${PY:-python3}
export NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-/tmp/numba_cache}
WORK=./gpu_results
SEED=${GPU_SEED:-0}
RESULTS=$WORK/transformer_gpu
if [[ $SEED != 0 ]]; then RESULTS=$WORK/transformer_gpu-s$SEED; fi
if [[ $DRY == 1 ]]; then WORK=${OUT:-./gpu_results}; RESULTS=$WORK/transformer_dry_run; if [[ $SEED != 0 ]]; then RESULTS=$RESULTS-s$SEED; fi; fi
mkdir -p "$RESULTS"
VARIANTS=${VARIANTS:-"rope nope alibi random-qk random-qkv learned-qk learned-qkv path"}
pack() {  # only eight files come back from a device call: one archive and the table
  if [[ -n "${OUT:-}" && $DRY == 0 ]]; then
    tar czf "$OUT/gpu_check.tgz" -C "$WORK" . && cp "$RESULTS/summary.md" "$OUT/" 2>/dev/null || true
  fi
}

if [[ $SMOKE == 1 ]]; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
  $PY -c "import torch, numpy, scipy, numba; print('torch', torch.__version__, 'cuda', torch.version.cuda, \
torch.cuda.is_available(), 'numpy', numpy.__version__, 'numba', numba.__version__)"
  $PY -c "import cupy; print('cupy', cupy.__version__, cupy.cuda.runtime.getDeviceCount(), 'GPU')" || echo "no cupy"
  $PY -c "import stylized, simulations.transformer.model.gpt; print('stylized', stylized.__version__)"
  for v in $VARIANTS; do
    timeout -k 5 150 $PY scripts/gpu_smoke.py --variant "$v" --preset gpu --steps 40 > "$RESULTS/smoke-$v.json" \
      2> "$RESULTS/smoke-$v.log" &
  done
  wait || true
  for v in $VARIANTS; do cat "$RESULTS/smoke-$v.json" 2>/dev/null || echo "{\"variant\": \"$v\", \"failed\": \"timeout\"}"; \
    tail -3 "$RESULTS/smoke-$v.log" 2>/dev/null | grep -v Warning || true; done
  nvidia-smi --query-gpu=memory.used --format=csv,noheader || true
  exit 0
fi

HAVE_CUPY=0
if [[ $CHECKS == 1 ]]; then
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
$PY -c "import stylized" 2>/dev/null || $PY -m pip install -q --no-deps --no-build-isolation -e . \
  || $PY -m pip install -q -e ".[test]"
if $PY -c "import cupy" 2>/dev/null || $PY -m pip install -q "cupy-cuda12x>=13"; then
HAVE_CUPY=1
$PY - <<'PY'
import cupy, numpy, numba
print("cupy", cupy.__version__, "numpy", numpy.__version__, "numba", numba.__version__,
      "GPUs", cupy.cuda.runtime.getDeviceCount())
PY
# alone, before anything else runs: the CPU side of the ratio gets every core
echo "== GPU sweep benchmark: sample_overlaps so2-uniform d=64, 4·10⁴ trials, n up to 2000"
timeout 60 $PY - <<'PY'
import time
import numpy as np
import cupy
from stylized.laws.families import make_family
from stylized.core.counter_rng import chunked_generators
from stylized.engine.sampling import sample_overlaps

fam = make_family("so2-uniform", d=64, omega=1.0)
ns = np.array([0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000])
TRIALS = 40_000

def cpu():  # the numba backend, chunked as the checks do (256 chains per chunk)
    return np.concatenate([sample_overlaps(fam, ns, s, g, "numba") for s, g in chunked_generators(TRIALS, 0, 256)])

def gpu():  # one call over all trials: the array namespace path on CuPy
    x = sample_overlaps(fam, ns, TRIALS, np.random.default_rng(0), "cupy")
    cupy.cuda.Device().synchronize()
    return x

sample_overlaps(fam, ns, 256, 0, "cupy"); cpu_small = sample_overlaps(fam, ns[:3], 8, 0, "numba")
def best(f, r):
    ts = []
    for _ in range(r):
        t0 = time.perf_counter(); x = f(); ts.append(time.perf_counter() - t0)
    return min(ts), x
tg, xg = best(gpu, 3)
tc, xc = best(cpu, 1)
theory = np.sinc(1.0 / np.pi) ** ns
se = np.sqrt(xg.var(0, ddof=1) / len(xg) + xc.var(0, ddof=1) / len(xc))
print(f"GPU {tg:.3f} s, CPU (numba, all cores) {tc:.3f} s, GPU/CPU speed-up {tc / tg:.1f}x (goal >= 20x)")
print("max |mean_gpu - mean_cpu| / se:", float(np.max(np.abs(xg.mean(0) - xc.mean(0)) / np.maximum(se, 1e-300))))
print("max |mean_gpu - theory|:", float(np.max(np.abs(xg.mean(0) - theory))))
PY
else echo "no cupy: the CuPy checks are skipped"; fi  # cupy
fi  # CHECKS == 1

gpu_checks() {  # runs beside the transformer comparison (correctness, not timings)
if [[ $HAVE_CUPY == 1 ]]; then
echo "== cupy tests"
timeout 90 $PY -m pytest -q -p no:cacheprovider tests/core/test_backend.py tests/test_cupy_*.py -rs || true
echo "== every Monte Carlo check on the GPU (--backend cupy, defaults; results to a temporary folder)"
STYLIZED_RESULTS_DIR=$(mktemp -d) STYLIZED_FIGURES_DIR=$(mktemp -d) STYLIZED_PAPER_CHECKS=$(mktemp) \
  timeout 240 $PY -m stylized check --all --force --all-backend cupy || echo "check --all on cupy: FAILED or timed out"
fi
echo "== transformer: 20 training steps of learned-qkv (smoke preset) on CUDA"
timeout 45 $PY - <<'PY' || echo "transformer step failed (torch with CUDA missing?)"
import time, torch
from simulations.transformer.model.config import GPTConfig
from simulations.transformer.model.gpt import GPT
assert torch.cuda.is_available(), "no CUDA torch"
cfg = GPTConfig(variant="learned-qkv", n_layer=4, n_head=4, n_embd=128, block_size=512, vocab_size=256)
m = GPT(cfg).cuda()
opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
x = torch.randint(0, 256, (16, 512), device="cuda")
for i in range(21):
    if i == 1:
        torch.cuda.synchronize(); t0 = time.perf_counter()
    logits, loss = m(x[:, :-1], x[:, 1:])
    opt.zero_grad(); loss.backward(); opt.step()
torch.cuda.synchronize()
print(f"learned-qkv 4x128, ctx 511, batch 16: {(time.perf_counter() - t0) / 20 * 1e3:.1f} ms/step, loss {loss.item():.3f}")
PY
}


echo "== transformer: the 8 main variants as concurrent processes (results in $RESULTS)"
if [[ $DRY == 1 ]]; then
  # CPU plumbing check: smoke preset, 10 steps, one thread each, torch-ops rotation path (no Numba compile)
  PRESET=smoke; BUDGET=30; GUARD=120; EXTRA=(--device cpu --steps 10 --threads 1)
  export OMP_NUM_THREADS=1 STYLIZED_ROTATION_KERNELS=0
else
  THREADS=${GPU_THREADS:-2}
  PRESET=gpu; BUDGET=${GPU_TRAIN_SECONDS:-240}; GUARD=${GPU_GUARD_SECONDS:-420}; EXTRA=(--threads "$THREADS")
  export OMP_NUM_THREADS=$THREADS
  if [[ "${GPU_COMPILE:-0}" == 1 ]]; then EXTRA+=(--compile); fi
  $PY -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))" \
    > "$RESULTS/env.txt" 2>&1 || true
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >> "$RESULTS/env.txt" 2>&1 || true
fi
CKPTS=$(mktemp -d)  # checkpoints (tens of MB each) and eval caches stay out of $OUT; the JSON results go there
declare -A PIDS
for v in $VARIANTS; do
  timeout -k 10 "$GUARD" $PY -m simulations.transformer.train.distributed --variant "$v" --preset "$PRESET" \
    --seed "$SEED" --ckpt "$CKPTS/checkpoints/$PRESET/$v.pt" --force --time-limit "$BUDGET" --eval --out "$RESULTS/$v.json" "${EXTRA[@]}" \
    > "$RESULTS/$v.log" 2>&1 &
  PIDS[$v]=$!
done
CHECKS_PID=""
if [[ $CHECKS == 1 ]]; then
  gpu_checks > "$WORK/gpu_checks.log" 2>&1 &
  CHECKS_PID=$!
fi
FAILED=""
for v in $VARIANTS; do
  if ! wait "${PIDS[$v]}"; then FAILED="$FAILED $v"; echo "  $v: FAILED or timed out (see $RESULTS/$v.log)"; fi
done
$PY -m simulations.transformer.c6.gpu_summary "$RESULTS" "$PRESET" $VARIANTS || echo "summary failed"
cp -r "$CKPTS/eval" "$RESULTS/" 2>/dev/null || true  # the per-window losses (the seed-level verdicts read them)
rm -rf "$CKPTS"
if [[ -n "$CHECKS_PID" ]]; then
  wait "$CHECKS_PID" || true
  echo "== GPU checks (ran beside the comparison)"; cat "$WORK/gpu_checks.log"
fi
pack
if [[ -n "$FAILED" ]]; then echo "transformer variants failed:$FAILED"; exit 1; fi
echo "transformer comparison: all variants done; results in $RESULTS"
