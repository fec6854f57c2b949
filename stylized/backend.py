"""Array backends behind one switch: ``backend="numpy" | "numba" | "cupy"``.

* ``numpy``: vectorised NumPy (the reference).
* ``numba``: NumPy for array work plus Numba-jitted kernels for the hot loops
  (:mod:`stylized.kernels`); random numbers are always drawn with NumPy Generators
  and passed in, so results do not depend on the number of threads.
* ``cupy``: the same vectorised code through CuPy's NumPy-compatible namespace on a GPU.
  CuPy's random streams differ from NumPy's: compare backends on identical inputs, or
  in distribution.

Example
-------
>>> xp = array_namespace("numpy")
>>> xp.__name__
'numpy'
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

BACKENDS = ("numpy", "numba", "cupy")

__all__ = ["BACKENDS", "check_backend", "array_namespace", "to_numpy", "cupy_available"]


def check_backend(backend: str) -> str:
    """Validate a backend name; ``cupy`` also needs CuPy and a visible GPU."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}; got {backend!r}")
    if backend == "cupy" and not cupy_available():
        raise ValueError("backend 'cupy' needs CuPy and a CUDA GPU, and none is available here")
    return backend


def cupy_available() -> bool:
    """Whether CuPy imports and sees at least one GPU."""
    try:
        import cupy  # noqa: F401

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def array_namespace(backend: str) -> ModuleType:
    """The array module for ``backend``: :mod:`numpy` for numpy/numba, :mod:`cupy` for cupy."""
    check_backend(backend)
    if backend == "cupy":
        import cupy

        return cupy
    return np


def to_numpy(x) -> np.ndarray:
    """Bring an array of any backend to host NumPy."""
    if hasattr(x, "get"):
        return x.get()
    return np.asarray(x)
