"""Check your own lemma: a Cayley step law in a few lines, its contract, three paper checks, one figure.

Run: ``python docs/examples/own_lemma.py OUT_DIR`` (the test suite runs it at small sizes).
"""

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import stylized
from stylized.harness.registry import get_check
from stylized.harness.testing import check_law


@dataclass(frozen=True)
class MyCayley(stylized.StepLaw):
    """``M = (I − A)(I + A)^{−1}``, ``A`` a Gaussian skew matrix: orthogonal, no closed-form mean."""

    d: int
    scale: float = 0.5

    def sample(self, xrng, shape, xp=np):
        g = xrng.standard_normal(tuple(shape) + (self.d, self.d))
        a = (g - xp.swapaxes(g, -1, -2)) * (self.scale / (2 * self.d) ** 0.5)
        eye = xp.eye(self.d)
        m = xp.linalg.solve(xp.swapaxes(eye + a, -1, -2), xp.swapaxes(eye - a, -1, -2))
        return xp.swapaxes(m, -1, -2)


def _g(x) -> str:
    return f"{x:.4g}" if isinstance(x, (int, float)) else str(x)


def main(out: Path) -> int:
    law = MyCayley(d=9)
    for item in check_law(law):  # the step-law contract; AssertionError names a broken item
        print(f"contract {item.name:14s} {item.detail}")
    lo, hi = law.gap_interval
    print(f"γ = {law.spectral_gap:.4f} [{lo:.4f}, {hi:.4f}] (95%), theory: {law.theory_kind}")
    results = {}
    for name in ("mixing", "haar-law", "value-incoherence"):
        small = {k: v for k, v in get_check(name).reduced.items()  # the quick sizes
                 if k not in ("family", "d")}
        results[name] = r = stylized.run(name, family=law, **small)
        h = r.headline  # the worst row: estimate, 95% interval, the theory and its kind
        print(f"{name:18s} holds={r.holds}  {h.get('quantity', '')}")
        interval = f"[{_g(h.get('ci_low'))}, {_g(h.get('ci_high'))}]"
        print(f"{'':18s} measured {_g(h.get('estimate'))} {interval}, theory {_g(h.get('theory'))}")
        print(f"{'':18s} theory kind: {h.get('theory_kind')}")
    out.mkdir(parents=True, exist_ok=True)
    results["mixing"].plot(out / "my_cayley_mixing.png")
    print("figure:", out / "my_cayley_mixing.png")
    return 0 if all(r.holds for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "own_lemma_out")))
