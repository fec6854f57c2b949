"""``python -m simulations.transformer {train,eval,compare} ...``."""

from .cli import main

raise SystemExit(main())
