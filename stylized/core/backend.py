"""Array backends behind one switch: ``backend="numpy" | "numba" | "cupy"``.

Two implementations per concept, no third:

* the **array-namespace path**, written once against ``xp`` (:mod:`stylized.engine.transport`'s engine and
  :func:`~stylized.engine.transport.beta_step`, the value Monte Carlo, the sweep's namespace twins).
  ``numpy`` is this path with ``xp = numpy``; ``cupy`` is the same code with CuPy arrays on a GPU;
* the **Numba kernels** (:mod:`stylized.engine.kernels`, the fused counter-RNG kernels): ``numba`` runs them
  for the hot loops, with NumPy for the array work around them.  Random numbers are drawn with NumPy
  Generators and passed in, or drawn inside a kernel from the counter stream of
  :mod:`stylized.core.counter_rng`, so results do not depend on the number of threads.

Each kernel's NumPy twin (``*_numpy``) is the namespace path or a call into the engine, and both are
tested against the dense route product (:mod:`stylized.engine.transport_reference`).  Where a sampler keeps a
host branch for ``numpy``/``numba`` beside its ``cupy`` branch, the two draw their random numbers in a
different order (NumPy's family streams vs device Generators), so they agree in law, not bit for bit:
compare backends on identical inputs, or in distribution.

A Monte Carlo routine that supports ``cupy`` is written once against an array namespace:
``xp = array_namespace(backend)`` and ``xrng = xp_generator(backend, rng)`` (for numpy/numba
this is ``rng`` itself, so those backends keep NumPy's stream; for cupy a CuPy Generator seeded
from ``rng``), and returns host arrays via :func:`to_numpy`.  :func:`numpy_standin_for_cupy`
runs that ``cupy`` path with NumPy as the namespace, which is how the path is tested on machines
without a GPU; on a GPU the same code runs on CuPy.

Example
-------
>>> xp = array_namespace("numpy")
>>> xp.__name__
'numpy'
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

import numpy as np

BACKENDS = ("numpy", "numba", "cupy")

__all__ = ["BACKENDS", "check_backend", "array_namespace", "to_numpy", "cupy_available", "xp_generator",
           "namespace_of", "numpy_standin_for_cupy"]

# When set (tests only), backend "cupy" runs its array-namespace path on this module instead of CuPy.
_CUPY_STANDIN: ModuleType | None = None


def check_backend(backend: str) -> str:
    """Validate a backend name; ``cupy`` also needs CuPy and a visible GPU."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}; got {backend!r}")
    if backend == "cupy" and not cupy_available():
        raise ValueError("backend 'cupy' needs CuPy and a CUDA GPU, and none is available here")
    return backend


def cupy_available() -> bool:
    """Whether CuPy imports and sees at least one GPU (or a NumPy stand-in is active)."""
    if _CUPY_STANDIN is not None:
        return True
    try:
        import cupy  # noqa: F401

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def array_namespace(backend: str) -> ModuleType:
    """The array module for ``backend``: :mod:`numpy` for numpy/numba, :mod:`cupy` for cupy."""
    check_backend(backend)
    if backend == "cupy":
        if _CUPY_STANDIN is not None:
            return _CUPY_STANDIN
        import cupy

        return cupy
    return np


def xp_generator(backend: str, rng: np.random.Generator):
    """The random Generator for ``backend``: ``rng`` itself for numpy/numba, else a Generator of the
    backend's namespace seeded with one integer drawn from ``rng`` (so the run still depends on ``rng``'s seed only).

    Example
    -------
    >>> g = np.random.default_rng(0)
    >>> xp_generator("numpy", g) is g
    True
    """
    if check_backend(backend) != "cupy":
        return rng
    return array_namespace("cupy").random.default_rng(int(rng.integers(2**63)))


def namespace_of(x) -> ModuleType:
    """The array module an array belongs to: :mod:`cupy` for CuPy arrays, else :mod:`numpy`."""
    if type(x).__module__.split(".")[0] == "cupy":
        import cupy

        return cupy
    return np


@contextmanager
def numpy_standin_for_cupy() -> Iterator[None]:
    """Within the block, backend ``"cupy"`` runs its array-namespace path with NumPy as the namespace.

    For tests on machines without a GPU: the code that runs is the CuPy path (namespace calls,
    a Generator seeded from the caller's, host copies at the end), only the arrays live on the host.

    Example
    -------
    >>> with numpy_standin_for_cupy():
    ...     array_namespace("cupy").__name__
    'numpy'
    """
    global _CUPY_STANDIN
    old, _CUPY_STANDIN = _CUPY_STANDIN, np
    try:
        yield
    finally:
        _CUPY_STANDIN = old


def to_numpy(x) -> np.ndarray:
    """Bring an array of any backend to host NumPy."""
    if hasattr(x, "get"):
        return x.get()
    return np.asarray(x)
