"""The RNG module: seeding (:func:`as_generator`, :func:`chunked_generators`, :func:`stream_keys`) and counter-based random numbers
inside Numba kernels, in a form LLVM can vectorise.

The ``t``-th draw of a stream with key ``K`` is the SplitMix64 output
``mix64(K + (t+1)·G)`` (``G = 0x9E3779B97F4A7C15``), i.e. exactly what a SplitMix64 generator
seeded with state ``K`` returns at its ``t``-th call.  A draw therefore depends on ``(K, t)``
only, never on the thread or the order that computed it, and a kernel can draw many
independent numbers in one SIMD loop (no sequential generator state).  Keys for trials come
from ``SeedSequence(seed)`` (:func:`stream_keys`), so runs stay reproducible from one seed.

Vectorisable primitives used by the fused kernels:

* :func:`unit_open` ``u ∈ (0, 1]`` from the top 53 bits; :func:`unit_from_high` / :func:`unit_from_low`
  two 32-bit uniforms ``∈ (0, 1)`` from one draw;
* :func:`log_unit` ``ln u`` for ``u ∈ (0, 1]`` (exponent split by a bit cast, then an odd
  ``atanh`` series; relative error ≲ 2e-15, no libm call);
* :func:`sincos` ``(sin x, cos x)`` by a Taylor polynomial on ``x/4`` and two angle doublings.

One convention.  Every counter stream in the package is this one: draw ``t`` of key ``K`` is
``mix64(K + (t+1)·G)`` (:func:`draw` in kernels, :func:`draw_np` in any array namespace).  A stream
written as ``mix64(K + t·G)`` (draw ``t`` counted from 0, as the streaming log-sum-exp of
:mod:`stylized.engine.lse` does) is the same sequence keyed :func:`zero_based_key` ``(K) = K − G``, so it is
served by :func:`draw` without changing a single number.  :func:`box_muller_np` and
:func:`unit_from_high_np` rebuild the kernels' normals and uniforms in NumPy (exact tests).

Kernels that call them need ``error_model="numpy"``: Numba's default Python error model puts a
zero-division check on every float division, which stops LLVM from vectorising the loop.

Example
-------
>>> splitmix64_reference(0, 3) == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]
True
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numba
import numpy as np
from llvmlite import ir
from numba import uint64
from numba.core import types
from numba.extending import intrinsic

__all__ = ["as_generator", "chunked_generators", "GOLDEN", "mix64", "mix64_np", "draw", "draw_np", "zero_based_key", "box_muller", "box_muller_np",
           "unit_from_high_np", "normals", "unit_open", "unit_from_high", "unit_from_low", "log_unit", "sincos",
           "stream_keys", "splitmix64_reference", "reference_seed"]

GOLDEN = 0x9E3779B97F4A7C15  # SplitMix64's increment (2⁶⁴/φ)
_M64 = (1 << 64) - 1


def splitmix64_reference(state: int, n: int) -> list[int]:
    """Pure-Python SplitMix64: the first ``n`` outputs of a generator seeded with ``state`` (for tests)."""
    out = []
    for _ in range(n):
        state = (state + GOLDEN) & _M64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
        out.append(z ^ (z >> 31))
    return out


def mix64_np(z: np.ndarray) -> np.ndarray:
    """:func:`mix64` on a ``uint64`` array of any namespace (NumPy or CuPy; wrapping arithmetic)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def as_generator(random_state: int | np.random.Generator | np.random.SeedSequence | None) -> np.random.Generator:
    """Return a :class:`numpy.random.Generator` from a seed, a SeedSequence or a Generator (passed through)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(random_state)


def chunked_generators(trials: int, seed: int, chunk: int = 256) -> Iterator[tuple[int, np.random.Generator]]:
    """Yield ``(size, Generator)`` for consecutive chunks covering ``trials`` trials.

    Each chunk has its own Generator spawned from ``SeedSequence(seed)``, so a result depends on the seed
    and the chunk size only, never on the number of threads or processes that ran the chunks.

    >>> [n for n, _ in chunked_generators(1000, seed=0, chunk=256)]
    [256, 256, 256, 232]
    """
    if isinstance(trials, bool) or not isinstance(trials, (int, np.integer)) or trials < 1:
        raise ValueError(f"trials must be an integer ≥ 1, got {trials!r}")
    n_chunks = -(-int(trials) // chunk)
    for c, ss in enumerate(np.random.SeedSequence(seed).spawn(n_chunks)):
        yield min(chunk, trials - c * chunk), np.random.default_rng(ss)


def draw_np(key, t):
    """:func:`draw` in any array namespace: ``mix64(key + (t+1)·G)`` for ``uint64`` arrays ``key``, ``t`` (broadcast)."""
    return mix64_np(key + (t + np.uint64(1)) * np.uint64(GOLDEN))


def zero_based_key(key: int) -> int:
    """The key under which :func:`draw` serves the stream ``mix64(key + t·G)``: ``key − G`` (mod ``2⁶⁴``)."""
    return (int(key) - GOLDEN) % 2**64


def unit_from_high_np(z):
    """:func:`unit_from_high` on a ``uint64`` array: ``(⌊z/2³²⌋ + ½)/2³² ∈ (0, 1)``."""
    return ((z >> np.uint64(32)).astype(float) + 0.5) / 2.0**32


def box_muller_np(key, t):
    """NumPy rebuild of :func:`box_muller` for pair indices ``t`` (``uint64`` array): ``(g_cos, g_sin)``.

    Uses libm's ``log``/``cos``/``sin`` instead of the kernels' polynomials (agreement to ~1e-15).
    """
    z0 = draw_np(key, np.uint64(2) * t)
    z1 = draw_np(key, np.uint64(2) * t + np.uint64(1))
    r = np.sqrt(-2.0 * np.log(((z0 >> np.uint64(11)) + np.uint64(1)).astype(float) / 2.0**53))
    phi = 2.0 * np.pi * unit_from_high_np(z1)
    return r * np.cos(phi), r * np.sin(phi)


def stream_keys(seed: int | np.random.SeedSequence, n: int) -> np.ndarray:
    """``n`` independent 64-bit stream keys from ``SeedSequence(seed)`` (one per trial), as ``uint64``."""
    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return ss.generate_state(int(n), dtype=np.uint64)


@intrinsic
def _bits_as_float(typingctx, bits):
    if bits != types.uint64:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.uint64), codegen


@intrinsic
def _float_as_bits(typingctx, x):
    if x != types.float64:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.uint64(types.float64), codegen


@numba.njit(inline="always")
def mix64(z):
    """SplitMix64's output function (Stafford's variant 13)."""
    z = (z ^ (z >> uint64(30))) * uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> uint64(27))) * uint64(0x94D049BB133111EB)
    return z ^ (z >> uint64(31))


@numba.njit(inline="always")
def draw(key, t):
    """The ``t``-th 64-bit draw of stream ``key``: ``mix64(key + (t+1)·G)``."""
    return mix64(uint64(key) + (uint64(t) + uint64(1)) * uint64(GOLDEN))


@numba.njit(inline="always")
def unit_open(z):
    """``u = (⌊z/2¹¹⌋ + 1)/2⁵³ ∈ (0, 1]`` from the top 53 bits (never 0, so ``ln u`` is finite)."""
    return ((z >> uint64(11)) + uint64(1)) * (1.0 / 9007199254740992.0)


@numba.njit(inline="always")
def unit_from_high(z):
    """``(⌊z/2³²⌋ + ½)/2³² ∈ (0, 1)`` from the high 32 bits."""
    return ((z >> uint64(32)) + 0.5) * (1.0 / 4294967296.0)


@numba.njit(inline="always")
def unit_from_low(z):
    """``(z mod 2³² + ½)/2³² ∈ (0, 1)`` from the low 32 bits."""
    return ((z & uint64(0xFFFFFFFF)) + 0.5) * (1.0 / 4294967296.0)


_LN2 = math.log(2.0)
_SQRT2 = math.sqrt(2.0)


@numba.njit(inline="always", fastmath={"contract", "reassoc", "arcp"}, error_model="numpy")
def log_unit(u):
    """``ln u`` for a positive normal float ``u``: ``u = m·2^e`` with ``m ∈ [1/√2, √2)``,
    ``ln m = 2 atanh(s) = 2s Σ_k s^{2k}/(2k+1)``, ``s = (m−1)/(m+1)``, ``|s| ≤ 0.172`` (terms to ``s¹⁷``)."""
    ix = _float_as_bits(u)
    e = np.int64(ix >> uint64(52)) - 1023
    m = _bits_as_float((ix & uint64(0x000FFFFFFFFFFFFF)) | uint64(0x3FF0000000000000))
    big = m > _SQRT2
    m = m * 0.5 if big else m
    e = e + 1 if big else e
    s = (m - 1.0) / (m + 1.0)
    s2 = s * s
    p = 1.0 + s2 * (1.0 / 3 + s2 * (1.0 / 5 + s2 * (1.0 / 7 + s2 * (1.0 / 9 + s2 * (
        1.0 / 11 + s2 * (1.0 / 13 + s2 * (1.0 / 15 + s2 * (1.0 / 17))))))))
    return e * _LN2 + 2.0 * s * p


@numba.njit(inline="always", fastmath={"contract", "reassoc", "arcp"}, error_model="numpy")
def sincos(x):
    """``(sin x, cos x)``: reduce to ``[−π, π]``, Taylor to degree 17 on ``x/4``, two angle doublings.

    Absolute error ≤ 1e-15 for ``|x| ≤ 2π`` (the kernels' range); the one-constant reduction adds
    about ``|x|·1.5e-16`` beyond it.
    """
    r = x - 2.0 * np.pi * np.rint(x / (2.0 * np.pi))
    h = 0.25 * r
    h2 = h * h
    s = h * (1.0 + h2 * (-1.0 / 6 + h2 * (1.0 / 120 + h2 * (-1.0 / 5040 + h2 * (1.0 / 362880 + h2 * (
        -1.0 / 39916800 + h2 * (1.0 / 6227020800 + h2 * (-1.0 / 1307674368000 + h2 / 355687428096000))))))))
    c = 1.0 + h2 * (-0.5 + h2 * (1.0 / 24 + h2 * (-1.0 / 720 + h2 * (1.0 / 40320 + h2 * (
        -1.0 / 3628800 + h2 * (1.0 / 479001600 + h2 * (-1.0 / 87178291200 + h2 / 20922789888000)))))))
    s, c = 2.0 * s * c, c * c - s * s
    return 2.0 * s * c, c * c - s * s


@numba.njit(inline="always", fastmath={"contract", "reassoc", "arcp"}, error_model="numpy")
def box_muller(key, t):
    """Standard normal pair ``t`` of stream ``key``: ``√(−2 ln u)(cos φ, sin φ)`` with ``u`` from draw ``2t``
    (53 bits, ``u ∈ (0, 1]``) and ``φ = 2π u'`` from the high 32 bits of draw ``2t + 1``."""
    r = math.sqrt(-2.0 * log_unit(unit_open(draw(key, uint64(2) * uint64(t)))))
    sn, cs = sincos(2.0 * np.pi * unit_from_high(draw(key, uint64(2) * uint64(t) + uint64(1))))
    return r * cs, r * sn


@numba.njit(cache=True, fastmath={"contract", "reassoc", "arcp"}, error_model="numpy")
def _normals(key, out):
    P = out.shape[0] // 2
    a, b = out[:P], out[P : 2 * P]
    for t in range(P):
        a[t], b[t] = box_muller(key, t)
    if out.shape[0] % 2:
        out[-1] = box_muller(key, P)[0]


def normals(key: int, n: int) -> np.ndarray:
    """``n`` standard normals from stream ``key``: pair ``t`` fills positions ``t`` and ``⌊n/2⌋ + t`` (SIMD-friendly).

    >>> x = normals(1, 100_001)
    >>> x.shape, abs(float(x.mean())) < 0.02, abs(float(x.var()) - 1) < 0.02
    ((100001,), True, True)
    """
    out = np.empty(int(n))
    _normals(np.uint64(int(key) % 2**64), out)
    return out


def reference_seed(tag: str, *child: int) -> np.random.SeedSequence:
    """The own seed of a theory reference (an estimated ``E[M]``, a reference rule): ``SeedSequence(0x5EED)`` keyed
    by the four-letter ``tag`` (and ``child``), never a check's stream.  A fresh object per call, so no result
    depends on how many references were drawn before it in the process."""
    key = int.from_bytes(tag.encode("ascii").ljust(4, b"\0")[:4], "big")
    return np.random.SeedSequence(0x5EED, spawn_key=(key, *map(int, child)))
