"""Shared fixtures: a temporary results/figures location so tests never touch committed files, and a session cache
of check runs at reduced sizes."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("NUMBA_CACHE_DIR", os.path.join(os.path.dirname(__file__), "..", ".numba_cache"))


@pytest.fixture()
def tmp_results(tmp_path, monkeypatch):
    """Point ``STYLIZED_RESULTS_DIR`` / ``STYLIZED_FIGURES_DIR`` at a temporary folder."""
    monkeypatch.setenv("STYLIZED_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("STYLIZED_FIGURES_DIR", str(tmp_path / "figures"))
    return tmp_path


@pytest.fixture()
def cupy_standin():
    """Run backend ``"cupy"`` through its array-namespace path with NumPy standing in for CuPy."""
    from stylized.core.backend import numpy_standin_for_cupy

    with numpy_standin_for_cupy():
        yield


@pytest.fixture(scope="session")
def check_runs():
    """Check runs at reduced sizes, each computed once per session and handed out as deep copies
    (:class:`tests._check_runs.CheckRuns`: ``check_runs.reduced(name, seed=0, mutant=None)``)."""
    from tests._check_runs import CheckRuns

    return CheckRuns()
