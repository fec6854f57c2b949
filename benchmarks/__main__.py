"""``python -m benchmarks``: the rows of ``stylized bench``."""

import argparse
import sys

from .runner import main

ap = argparse.ArgumentParser(prog="python -m benchmarks")
ap.add_argument("--json", action="store_true")
ap.add_argument("--repeat", type=int, default=5)
ap.add_argument("--with-check-all", action="store_true")
ap.add_argument("--small", action="store_true")
a = ap.parse_args()
sys.exit(main(a.repeat, a.json, a.with_check_all, a.small))
