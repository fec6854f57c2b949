"""``stylized premises --family LAW --d D``: the measured premises of C2/C3 for one law (a table, or ``--json``).

Exit 0 when no premise fails, 1 when one does (C2 cannot hold for the law), 2 on bad input.
"""

from __future__ import annotations

import json

from ..core.errors import InvalidInput
from ..core.options import Int, arg_type

__all__ = ["add_parser", "cmd_premises"]


def add_parser(sub) -> None:
    p = sub.add_parser("premises", help="measured premises of C2/C3 for one step law (harmonic gaps, periodicity)",
                       description="γ₁ = 1 − ||E[M]||, the harmonic gaps of degrees 2 and 4 (closed form or Monte Carlo "
                                   "with a 95% interval), the SO(2) phase gaps k = 1…K and periodicity of one law. "
                                   "Exit 1 when a premise fails.")
    p.add_argument("--family", required=True, metavar="LAW",
                   help="a registered law (e.g. householder, coord-reflection, lattice-angle) or 'package.module:Factory'")
    p.add_argument("--d", type=arg_type(Int(2, 4096)), default=16, help="dimension d (default 16)")
    p.add_argument("--K", type=arg_type(Int(1, 64)), default=8, help="SO(2) harmonics k = 1…K (default 8)")
    p.add_argument("--samples", type=arg_type(Int(100, 10**6)), default=4000,
                   help="draws behind each Monte Carlo operator (default 4000)")
    p.add_argument("--seed", type=arg_type(Int(0, 2**32 - 1)), default=0, help="reference stream key (default 0)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_premises)


def _fmt(x) -> str:
    return "—" if x is None else f"{x:.4g}"


def cmd_premises(args) -> int:
    from ..laws.registry import make_family
    from ..theory.premises import measure_premises

    try:
        law = make_family(args.family, args.d)
    except (ValueError, TypeError) as e:
        raise InvalidInput(f"--family: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    if not law.orthogonal:
        raise InvalidInput(f"--family: {law.name} is not orthogonal (orthogonal=False): C2's premises concern "
                           "orthogonal steps")
    if int(law.d) != args.d:
        raise InvalidInput(f"--family: {law.name} built a law of d = {law.d}, not --d {args.d}")
    try:
        prem = measure_premises(law, seed=args.seed, K=args.K, samples=args.samples)
    except ValueError as e:
        raise InvalidInput(f"--family: {str(e).splitlines()[0]}") from None
    if args.json:
        print(json.dumps(prem.as_dict(), indent=1))
    else:
        print(f"{law.name}, d = {law.d}: C2's claim is the {prem.claim} law")
        print(f"{'premise':58s} {'gap':>9s} {'95% interval':>21s} {'status':>12s}  period-2  how")
        for g in prem.gaps:
            ci = "—" if g.low is None else f"[{_fmt(g.low)}, {_fmt(g.high)}]"
            per = "—" if g.periodic is None else ("yes" if g.periodic else "no")
            print(f"{g.name:58s} {_fmt(g.value):>9s} {ci:>21s} {g.status:>12s}  {per:8s}  {g.kind}"
                  + (f"; {g.note}" if g.note else ""))
        print(prem.note("C2") or "no premise fails" + ("" if prem.holds else " (some not measured or undecided)"))
    return 1 if prem.holds is False else 0
