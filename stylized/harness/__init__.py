"""The harness around the checks: the check registry and its theories (:mod:`.registry`), results on disk
(:mod:`.results`), ``paper_checks.md`` (:mod:`.report`), mutants, false-rejection rates and power
(:mod:`.falsify`), ``stylized.run`` (:mod:`.api`), sweeps (:mod:`.sweep`), the figure theme
(:mod:`.plotting`) and the public step-law contract ``check_law`` (:mod:`.testing`)."""
