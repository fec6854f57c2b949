"""A session cache of check runs at reduced sizes: each distinct run is computed once per test session and every test
that asks for it gets its own deep copy (never a shared object a test could corrupt).

The session fixture ``check_runs`` (``tests/conftest.py``) is a :class:`CheckRuns`: ``check_runs.reduced(name, seed=0,
mutant=None)`` is :func:`stylized.harness.falsify.run_reduced` of the registered check (the mutant by name).  A run
under a test's own patch, or one a test repeats on purpose (reproducibility), calls ``run_reduced`` directly.
"""

from __future__ import annotations

import copy
import json


class CheckRuns:
    """``run_reduced`` results by ``(check, seed, mutant, backend, params)``, each computed once; ``computed`` counts
    the runs made."""

    def __init__(self) -> None:
        self._results: dict[str, dict] = {}
        self.computed = 0

    def reduced(self, name: str, *, seed: int = 0, mutant: str | None = None, backend: str = "numba",
                params: dict | None = None) -> dict:
        """``run_reduced(get_check(name), seed=…, mutant=…, backend=…, params=…)``: ``holds``, ``seconds`` (of the one
        computation) and ``result``, a fresh deep copy on every call."""
        from stylized.harness.falsify import run_reduced
        from stylized.harness.registry import get_check

        key = json.dumps([name, int(seed), mutant, backend, params], sort_keys=True, default=repr)
        if key not in self._results:
            check = get_check(name)
            m = None if mutant is None else next(x for x in check.mutants if x.name == mutant)
            self._results[key] = run_reduced(check, seed=seed, mutant=m, backend=backend, params=params)
            self.computed += 1
        return copy.deepcopy(self._results[key])
