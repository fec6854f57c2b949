"""Far mass ``ρ_D(L)`` of one step law in the stylized model, simulated literally (the ``contraction-norm`` check).

A query ``q`` (all entries ``1/√d``) at the end of a context of length ``L``; keys ``k_n = q`` on the near
routes ``n < D`` and uniform on ``S^{d−1}`` beyond; logits ``λ qᵀ P_n k_n`` with ``P_nᵀ q`` from the law's
own transport (:meth:`StepLaw.route_queries` on route-length draws); ``ρ_D(L) = expit(LSE_far − LSE_near)``.
Every ``L`` uses a prefix of the longest context.  Works for any law (orthogonal or not): a contraction's
logits stay in ``[−λ, λ]`` too, since ``||P_n|| ≤ 1``.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from stylized.core.backend import to_numpy
from stylized.engine.sampling import equal_energy_query
from stylized.laws.base import StepLaw

__all__ = ["far_mass_draws"]

_ELEMS = 1 << 22  # trials × route steps × d per block of contexts


def far_mass_draws(law: StepLaw, Ls, lam: float, D: int, trials: int, xrng, xp=np) -> dict:
    """``ρ_D(L)`` draws for ``trials`` contexts: ``{"rho": (trials, len(Ls)), "max_abs_logit": (trials,),
    "far_rms": (trials, len(Ls)), "lse_near": (trials,)}`` on the host.

    ``lse_near = log Σ_{n<D} e^{s_n}``; ``far_rms`` is the root mean square far logit over route lengths
    ``[L/2, L)``, which shows whether far logits spread over ``±λ/√d`` or collapse to 0.

    ``Ls`` sorted, each ``> D``; contexts are drawn in blocks of about ``2²²`` numbers.
    """
    Ls = np.asarray(Ls, dtype=np.int64)
    N, d = int(Ls.max()), law.d
    q = xp.asarray(equal_energy_query(d))
    group = max(1, _ELEMS // (N * d))
    rho, rms, amax, lnear = [], [], [], []
    for start in range(0, trials, group):
        T = min(group, trials - start)
        steps = law.sample(xrng, (T, N), xp)
        U = law.route_queries(steps, q, xrng=xrng)  # (T, N, d): u_n = P_nᵀ q
        g = xrng.standard_normal((T, N, d))
        keys = g / xp.sqrt(xp.sum(g * g, axis=-1, keepdims=True))
        keys[:, :D] = q
        s = to_numpy(lam * xp.einsum("tnd,tnd->tn", U, keys))
        near = special.logsumexp(s[:, :D], axis=1)
        far = np.stack([special.logsumexp(s[:, D:L], axis=1) for L in Ls], axis=1)
        rho.append(special.expit(far - near[:, None]))
        rms.append(np.stack([np.sqrt(np.mean(s[:, L // 2:L] ** 2, axis=1)) for L in Ls], axis=1))
        amax.append(np.abs(s).max(axis=1))
        lnear.append(near)
    return {"rho": np.concatenate(rho), "far_rms": np.concatenate(rms), "max_abs_logit": np.concatenate(amax),
            "lse_near": np.concatenate(lnear)}
