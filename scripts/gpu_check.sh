#!/usr/bin/env bash
# GPU check (≤ 5 minutes on one GPU machine): the CuPy tests, every Monte Carlo check with --backend cupy,
# the largest sweep on GPU vs CPU, and a short transformer training step on CUDA.
#   bash scripts/gpu_check.sh            (from the repository root)
# The GPU machine has no package registry: its python3 already holds numpy, scipy, numba, cupy,
# matplotlib, seaborn, tqdm, pytest and hypothesis, so the package is installed without dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-python3}
export NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-/tmp/numba_cache}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
$PY -c "import stylized" 2>/dev/null || $PY -m pip install -q --no-deps --no-build-isolation -e . \
  || $PY -m pip install -q -e ".[test]"
$PY -c "import cupy" 2>/dev/null || $PY -m pip install -q "cupy-cuda12x>=13" || { echo "no cupy"; exit 1; }
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
from stylized.families import make_family
from stylized.montecarlo import chunked_generators
from stylized.sampling import sample_overlaps

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
