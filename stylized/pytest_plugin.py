"""The pytest plugin (entry point ``pytest11``: loaded by every pytest run where stylized is installed).

Fixtures ``rng`` (a generator seeded from the test's id), ``numba_warm`` (the library's Numba kernels compiled
or loaded once per session, so no example pays for compilation under a Hypothesis deadline) and ``law`` (the
law under test); the marker ``@pytest.mark.law(name, d, **params)``; and
:func:`parametrize_with_law_checks`, one pytest case per (law, item of :func:`~stylized.harness.testing.check_law`).
Nothing of the library is imported until a fixture or the helper is used.  Disable with ``-p no:stylized``.

Example (a test module)::

    from stylized.laws.families import make_family
    from stylized.pytest_plugin import parametrize_with_law_checks

    @parametrize_with_law_checks([make_family("householder", 13), make_family("so2-uniform", 8)])
    def test_contract(law, law_check):   # cases householder-d13-shape, …, so2-uniform-d8-dimensions
        law_check(law)
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

import pytest

__all__ = ["parametrize_with_law_checks", "law_check_items", "law_id", "rng", "numba_warm", "law"]


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "law(name, d=8, **params): the law the ``law`` fixture builds "
                                       "(stylized.laws.registry.make_family)")


def law_id(law) -> str:
    """``householder-d13``: the law's name and dimension, the prefix of its cases' ids."""
    return f"{law.name}-d{law.d}"


def law_check_items() -> tuple[str, ...]:
    """The names of the contract's items (:data:`stylized.harness.testing.LAW_CHECKS`), one pytest case each."""
    from stylized.harness.testing import LAW_CHECKS

    return tuple(LAW_CHECKS)


def parametrize_with_law_checks(laws: Iterable, ids: Iterable[str] | None = None) -> pytest.MarkDecorator:
    """``pytest.mark.parametrize(("law", "law_check"), …)``: one case per law and contract item
    (:func:`stylized.harness.testing.law_checks`), as scikit-learn's ``parametrize_with_checks``, with ids like
    ``householder-d13-isotropic``; the test calls ``law_check(law)`` (``pytest -k "householder and isotropic"``
    runs one item).  ``ids``: one prefix per law instead of :func:`law_id` (two laws of one name and ``d``).
    """
    from stylized.harness.testing import law_checks

    laws = list(laws)
    if not laws:
        raise ValueError("parametrize_with_law_checks: give at least one law")
    prefixes = [law_id(law) for law in laws] if ids is None else list(ids)
    if len(prefixes) != len(laws):
        raise ValueError(f"parametrize_with_law_checks: {len(prefixes)} ids for {len(laws)} laws")
    cases = [case for law in laws for case in law_checks(law)]
    ids = [f"{prefix}-{check.item_name}" for prefix, law in zip(prefixes, laws) for _, check in law_checks(law)]
    return pytest.mark.parametrize(("law", "law_check"), cases, ids=ids)


@pytest.fixture()
def rng(request):
    """A :class:`numpy.random.Generator` seeded from the test's node id (CRC-32): the same draws on every run
    of that test, different ones for different tests."""
    import numpy as np

    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


@pytest.fixture(scope="session")
def numba_warm() -> tuple[str, ...]:
    """The library's Numba kernels compiled (or loaded from Numba's cache) once per session; returns their names.

    Use it in a Hypothesis test with a deadline, or time a kernel after it: the first call of a kernel compiles."""
    import numpy as np

    from stylized.engine.kernels import kernel
    from stylized.laws.registry import make_family

    rng = np.random.default_rng(0)
    q = np.ones(4) / 2.0
    make_family("householder", 4).fast_overlaps(np.array([1, 2]), 4, rng, "numba", q)
    kernel("householder_queries", "numba")(make_family("householder", 4).rvs(3, rng), q)
    theta = rng.random((3, 2))
    kernel("so2_scores", "numba")(theta, theta, theta)
    return ("householder_overlaps", "householder_queries", "so2_scores")


@pytest.fixture()
def law(request):
    """The law under test: ``request.param`` under indirect parametrisation, else the ``law`` marker's
    ``make_family(name, d, **params)``, else Householder in ``d = 8``."""
    from stylized.laws.registry import make_family

    if hasattr(request, "param"):
        return request.param
    marker = request.node.get_closest_marker("law")
    if marker is None:
        return make_family("householder", 8)
    name, *rest = marker.args or ("householder",)
    kwargs = dict(marker.kwargs)
    d = rest[0] if rest else kwargs.pop("d", 8)
    return make_family(name, d, **kwargs)
