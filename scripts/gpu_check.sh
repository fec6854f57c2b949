#!/usr/bin/env bash
# GPU check on one GPU machine (≈ 15 minutes): the CuPy tests, every Monte Carlo check with --backend cupy,
# the largest sweep on GPU vs CPU, a short transformer training step on CUDA, then the transformer
# comparison: the 8 main variants (rope nope alibi random-qk random-qkv learned-qk learned-qkv path) trained
# as concurrent processes on the one GPU under the "gpu" preset (6 x 384, context 256, 2,500 steps, bf16),
# each evaluated 1x..256x (65,536 tokens, the author's 20 random windows per length), with a wall-clock guard (`timeout`, and --time-limit inside each run).
#   bash scripts/gpu_check.sh               (from the repository root; results under $OUT, else ./gpu_results)
#   bash scripts/gpu_check.sh --transformer-only   (only the 8-variant comparison, ≈ 9 minutes)
#   bash scripts/gpu_check.sh --dry-run     (CPU: skips the GPU checks; smoke preset, < 60 s)
# Knobs: PY, GPU_TRAIN_SECONDS (training budget per variant, default 360), GPU_GUARD_SECONDS (hard
# timeout per variant, default 560), GPU_COMPILE=1 (torch.compile), VARIANTS (space separated).
# The GPU machine has no package registry and no network: its python3 already holds numpy, scipy, numba,
# cupy, matplotlib, seaborn, tqdm, pytest and hypothesis, so the package is installed without dependencies;
# the corpus is the builtin one (the standard library's source), bytes.
set -euo pipefail
cd "$(dirname "$0")/.."
DRY=0; CHECKS=1
if [[ "${1:-}" == "--dry-run" ]]; then DRY=1; CHECKS=0; fi
if [[ "${1:-}" == "--transformer-only" ]]; then CHECKS=0; fi
if [[ $DRY == 1 && -z "${PY:-}" && -x .venv/bin/python ]]; then PY=.venv/bin/python; fi
PY=${PY:-python3}
export NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-/tmp/numba_cache}
RESULTS=${OUT:-./gpu_results}/transformer_gpu
if [[ $DRY == 1 ]]; then RESULTS=${OUT:-./gpu_results}/transformer_dry_run; fi
mkdir -p "$RESULTS"

if [[ $CHECKS == 1 ]]; then
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
$PY -c "import stylized" 2>/dev/null || $PY -m pip install -q --no-deps --no-build-isolation -e . \
  || $PY -m pip install -q -e ".[test]"
if $PY -c "import cupy" 2>/dev/null || $PY -m pip install -q "cupy-cuda12x>=13"; then
$PY - <<'PY'
import cupy, numpy, numba
print("cupy", cupy.__version__, "numpy", numpy.__version__, "numba", numba.__version__,
      "GPUs", cupy.cuda.runtime.getDeviceCount())
PY
echo "== cupy tests"
timeout 90 $PY -m pytest -q -p no:cacheprovider tests/test_backend.py tests/test_cupy_*.py -rs || true
echo "== every Monte Carlo check on the GPU (--backend cupy, defaults; results to a temporary folder)"
STYLIZED_RESULTS_DIR=$(mktemp -d) STYLIZED_FIGURES_DIR=$(mktemp -d) STYLIZED_PAPER_CHECKS=$(mktemp) \
  timeout 120 $PY -m stylized check --all --force --all-backend cupy || echo "check --all on cupy: FAILED or timed out"
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
echo "== transformer: 20 training steps of learned-qkv (smoke preset) on CUDA"
timeout 45 $PY - <<'PY' || echo "transformer step failed (torch with CUDA missing?)"
import time, torch
from simulations.transformer.model import GPT, GPTConfig
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
fi  # CHECKS == 1

echo "== transformer: the 8 main variants as concurrent processes (results in $RESULTS)"
VARIANTS=${VARIANTS:-"rope nope alibi random-qk random-qkv learned-qk learned-qkv path"}
if [[ $DRY == 1 ]]; then
  # CPU plumbing check: smoke preset, 10 steps, one thread each, torch-ops rotation path (no Numba compile)
  PRESET=smoke; BUDGET=30; GUARD=120; EXTRA=(--device cpu --steps 10 --threads 1)
  export OMP_NUM_THREADS=1 STYLIZED_ROTATION_KERNELS=0
else
  PRESET=gpu; BUDGET=${GPU_TRAIN_SECONDS:-360}; GUARD=${GPU_GUARD_SECONDS:-560}; EXTRA=(--threads 2)
  export OMP_NUM_THREADS=2
  if [[ "${GPU_COMPILE:-0}" == 1 ]]; then EXTRA+=(--compile); fi
  $PY -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))" \
    > "$RESULTS/env.txt" 2>&1 || true
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >> "$RESULTS/env.txt" 2>&1 || true
fi
CKPTS=$(mktemp -d)  # checkpoints (tens of MB each) and eval caches stay out of $OUT; the JSON results go there
declare -A PIDS
for v in $VARIANTS; do
  timeout -k 10 "$GUARD" $PY -m simulations.transformer.distributed --variant "$v" --preset "$PRESET" \
    --ckpt "$CKPTS/checkpoints/$PRESET/$v.pt" --force --time-limit "$BUDGET" --eval --out "$RESULTS/$v.json" "${EXTRA[@]}" \
    > "$RESULTS/$v.log" 2>&1 &
  PIDS[$v]=$!
done
FAILED=""
for v in $VARIANTS; do
  if ! wait "${PIDS[$v]}"; then FAILED="$FAILED $v"; echo "  $v: FAILED or timed out (see $RESULTS/$v.log)"; fi
done
$PY - "$RESULTS" "$PRESET" $VARIANTS <<'PY'
import json, sys
from pathlib import Path
res, preset, variants = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
rows, table = [], []
mults = None
for v in variants:
    f = res / f"{v}.json"
    if not f.exists():
        table.append(f"| {v} | failed | | | |")
        continue
    d = json.loads(f.read_text())
    ev = {r["multiple"]: r for r in d.get("eval", [])}
    mults = mults or sorted(ev)
    rows.append({"variant": v, "steps": d["step"], "train_s": round(d["seconds"], 1),
                 "final_loss": d["history"][-1][1], "eval": d.get("eval", [])})
    ratios = " | ".join(f"{ev[m]['ratio']:.2f}" for m in sorted(ev))
    table.append(f"| {v} | {d['step']} | {d['seconds']:.0f} | {ev[1]['ppl']:.3f} | {ratios} |")
head = " | ".join(f"{m}x" for m in (mults or []))
md = [f"# transformer comparison, preset {preset}: PPL(m·L)/PPL(L) per variant", "",
      f"| variant | steps | train s | PPL(1x) | {head} |", "|" + "---|" * (4 + len(mults or [])), *table]
(res / "summary.md").write_text("\n".join(md) + "\n")
(res / "summary.json").write_text(json.dumps({"preset": preset, "rows": rows}, indent=1))
print("\n".join(md))
PY
rm -rf "$CKPTS"
if [[ -n "$FAILED" ]]; then echo "transformer variants failed:$FAILED"; exit 1; fi
echo "transformer comparison: all variants done; results in $RESULTS"
