"""Options the ``stylized transformer`` sub-commands share: the preset names, the tokenizer, the options of
``train`` / ``eval`` / ``compare``, and the checks of comma-separated values (a ``ValueError``: one line and
exit 2 through :func:`.cli_guard.guard`)."""

from __future__ import annotations

import argparse

from stylized.core.options import Choice, Int, arg_type

__all__ = ["PRESET_NAMES", "TOKENIZER", "add_run_options", "check_choice", "seed_list", "variant_list"]

PRESET_NAMES = ("smoke", "cpu", "cpu-long", "gpu", "paper")
TOKENIZER = arg_type(Choice("bytes", "bpe"))


def check_choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    """``value`` is one of ``allowed``, else a ``ValueError`` naming ``name``."""
    if value not in allowed:
        raise ValueError(f"{name}={value!r} is not one of: {', '.join(allowed)}")


def seed_list(name: str, text: str | None) -> list[int] | None:
    """``"0,1,2"`` as ``[0, 1, 2]`` (``None`` stays ``None``: the preset's seeds)."""
    if text is None:
        return None
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"{name}={text!r} must be a comma-separated list of integers ≥ 0") from None
    if not out or min(out) < 0:
        raise ValueError(f"{name}={text!r} must be a non-empty comma-separated list of integers ≥ 0")
    return out


def variant_list(text: str | None, variants: tuple[str, ...]) -> list[str] | None:
    """``"rope,nope"`` as ``["rope", "nope"]``, each one of ``variants`` (``None``: the command's default)."""
    chosen = [v.strip() for v in text.split(",") if v.strip()] if text else None
    for v in chosen or []:
        check_choice("--variants", v, variants)
    return chosen


def add_run_options(sp: argparse.ArgumentParser) -> None:
    """``--preset``, ``--seed``, ``--results-dir``, ``--threads`` of ``train``, ``eval`` and ``compare``."""
    sp.add_argument("--preset", default="smoke", type=arg_type(Choice(*PRESET_NAMES)), help=f"one of {', '.join(PRESET_NAMES)}")
    sp.add_argument("--seed", type=arg_type(Int(0, 2**32 - 1)), default=0)
    sp.add_argument("--results-dir", default=None,
                    help="default simulations/results/transformer")
    sp.add_argument("--threads", type=arg_type(Int(1, 256)), default=None,
                    help="torch CPU threads (1 avoids oversubscription on a busy machine)")
