"""The schema of a saved check result: what :func:`result_problem` accepts before a result is trusted.

A saved result is a cache of a deterministic run, so a file that breaks the schema (wrong types, a
non-finite number, a verdict that is not a boolean) is named and recomputed, never copied on.
"""

from __future__ import annotations

import json
import math
import re

__all__ = ["parse_json", "result_problem", "VERDICT_KEYS", "NUMBER_KEYS"]

#: Keys (in ``rows`` and ``headline``) that hold a verdict: ``true``, ``false`` or ``null`` only.
VERDICT_KEYS = frozenset({"holds", "passes", "agrees", "consistent", "within_joint_ci", "in_verdict", "bound_holds",
                          "mixed", "at_chance", "above_chance", "iid_rejected", "orthogonal", "resolved", "streamed",
                          "decorrelates_in_eval", "decorrelates_in_train", "bounded", "ok", "matches"})
#: Keys (in ``rows`` and ``headline``) that hold a number (or ``null``: not measured).
NUMBER_KEYS = frozenset({"estimate", "ci_low", "ci_high", "theory", "bound", "n_samples", "n", "M", "t",
                         "ratio_of_means", "se", "p_value", "seconds"})
_HASH = re.compile(r"[0-9a-f]{12}")
_MAX_DEPTH = 64


def _no_constant(name: str):
    raise ValueError(f"non-finite number {name} (a saved result holds finite numbers only)")


def parse_json(text: str):
    """``json.loads`` that refuses ``NaN``/``Infinity`` (a result is written with ``allow_nan=False``)."""
    return json.loads(text, parse_constant=_no_constant)


_INT_MAX = 2**63


def _is_number(v) -> bool:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    return abs(v) < _INT_MAX if isinstance(v, int) else math.isfinite(v)


def _json_problem(x, where: str, depth: int = 0) -> str | None:
    """The first value in ``x`` that a saved result cannot hold (a non-finite float, a non-JSON type, too deep)."""
    if depth > _MAX_DEPTH:
        return f"{where} is nested deeper than {_MAX_DEPTH} levels"
    if isinstance(x, dict):
        for k, v in x.items():
            if not isinstance(k, str):
                return f"{where} has a non-text key {k!r}"
            if (p := _json_problem(v, f"{where}.{k}", depth + 1)) is not None:
                return p
        return None
    if isinstance(x, list):
        for i, v in enumerate(x):
            if (p := _json_problem(v, f"{where}[{i}]", depth + 1)) is not None:
                return p
        return None
    if isinstance(x, float) and not math.isfinite(x):
        return f"{where} is {x} (not a finite number)"
    if isinstance(x, int) and not isinstance(x, bool) and abs(x) >= _INT_MAX:
        return f"{where} is an integer beyond ±2⁶³"
    if x is None or isinstance(x, (str, bool, int, float)):
        return None
    return f"{where} has type {type(x).__name__}"


def _field_problem(key: str, v, where: str) -> str | None:
    if v is None:
        return None
    if key in VERDICT_KEYS and not isinstance(v, bool):
        return f"{where}.{key} must be true, false or null, got {v!r:.40}"
    if key in NUMBER_KEYS and not _is_number(v):
        return f"{where}.{key} must be a finite number or null, got {v!r:.40}"
    return None


def _rows_problem(rows: list) -> str | None:
    kinds: dict[str, tuple[str, int]] = {}  # key → (kind, first row): a column holds one kind of value
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            return f"rows[{i}] is not an object"
        for k, v in row.items():
            if (p := _field_problem(k, v, f"rows[{i}]")) is not None:
                return p
            if v is None:
                continue
            kind = ("verdict" if isinstance(v, bool) else "number" if isinstance(v, (int, float)) else
                    "text" if isinstance(v, str) else "list" if isinstance(v, list) else "object")
            first = kinds.setdefault(k, (kind, i))
            if first[0] != kind:
                return f"rows[{i}].{k} is a {kind} but rows[{first[1]}].{k} is a {first[0]}"
    return None


def result_problem(r, name: str | None = None) -> str | None:
    """Why ``r`` (a parsed ``<name>.json``) is not a valid saved result, or ``None`` when it is.

    Required: ``claim`` (text; ``name`` when given), ``params`` (an object with an integer ``seed`` ≥ 0 and a
    text ``backend``), ``holds`` (a verdict: true, false, or null for a reported measurement), ``rows`` (a
    list of objects, each column one kind of value), ``seconds`` (a finite number ≥ 0) and ``meta`` (an
    object with a 12-hex-digit ``code_hash``).  ``headline``, when present, is an object.  Everywhere:
    finite numbers only, verdict keys (:data:`VERDICT_KEYS`) booleans, number keys (:data:`NUMBER_KEYS`)
    numbers.
    """
    if not isinstance(r, dict):
        return f"not a check result (a JSON {type(r).__name__}, not an object)"
    for key in ("claim", "params", "holds", "rows", "seconds", "meta"):
        if key not in r:
            return f"not a check result (no {key!r})"
    if (p := _json_problem(r, "result")) is not None:
        return p
    if not isinstance(r["claim"], str) or (name is not None and r["claim"] != name):
        return f"claim is {r['claim']!r:.40}, not {name!r}"
    if r["holds"] is not None and not isinstance(r["holds"], bool):
        return f"holds must be true, false or null, got {r['holds']!r:.40}"
    params = r["params"]
    if not isinstance(params, dict):
        return "params is not an object"
    seed = params.get("seed")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        return f"params.seed must be an integer ≥ 0, got {seed!r:.40}"
    if not isinstance(params.get("backend"), str):
        return f"params.backend must be text, got {params.get('backend')!r:.40}"
    if not _is_number(r["seconds"]) or r["seconds"] < 0:
        return f"seconds must be a finite number ≥ 0, got {r['seconds']!r:.40}"
    if not isinstance(r["rows"], list):
        return "rows is not a list"
    if (p := _rows_problem(r["rows"])) is not None:
        return p
    meta = r["meta"]
    if not isinstance(meta, dict) or not isinstance(meta.get("code_hash"), str) or not _HASH.fullmatch(meta["code_hash"]):
        return "meta.code_hash must be 12 hex digits"
    head = r.get("headline", {})
    if not isinstance(head, dict):
        return "headline is not an object"
    for k, v in head.items():
        if (p := _field_problem(k, v, "headline")) is not None:
            return p
        if k in ("quantity", "verdict", "theory_kind", "bound_kind") and v is not None and not isinstance(v, str):
            return f"headline.{k} must be text, got {v!r:.40}"
    for k in ("paper_claim",):
        if k in r and not isinstance(r[k], str):
            return f"{k} must be text, got {r[k]!r:.40}"
    return None
