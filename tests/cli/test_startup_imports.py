"""Start-up stays light: ``stylized check`` (its parser, every check module, ``--list``) never imports torch.

torch costs about a second to import; only the transformer's own commands and renderers may pay it.  Each case
runs in a fresh interpreter, since this test session may have imported torch already.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PATHS = {
    "check-parser": "from stylized.cli.app import build_parser; build_parser('check')",
    "load-checks": "from stylized.harness.registry import load_checks; load_checks(external=True)",
    "check-list": ("import contextlib, io\nfrom stylized.cli.app import main\n"
                   "with contextlib.redirect_stdout(io.StringIO()):\n    assert main(['check', '--list']) == 0"),
}


@pytest.mark.parametrize("path", PATHS, ids=list(PATHS))
def test_check_import_path_does_not_import_torch(path):
    code = PATHS[path] + "\nimport sys\nprint('torch' in sys.modules)"
    env = {**os.environ, "STYLIZED_NO_CACHE": "1"}  # the listing built, not read from the cache
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().splitlines()[-1] == "False", f"{path} imported torch"


def test_check_list_is_served_from_its_cache_without_the_checks(tmp_path):
    """``check --list`` twice: the second prints the same text from the cache, importing neither SciPy nor the
    check modules; a stale key or ``STYLIZED_NO_CACHE`` rebuilds it."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    env.pop("STYLIZED_NO_CACHE", None)
    code = ("import contextlib, io, sys\nfrom stylized.cli.app import main\nbuf = io.StringIO()\n"
            "with contextlib.redirect_stdout(buf):\n    assert main(['check', '--list']) == 0\n"
            "print(repr(buf.getvalue()))\nprint('scipy.stats' in sys.modules)")

    def run(**extra):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                           env={**env, **extra})
        assert r.returncode == 0, r.stderr[-2000:]
        text, scipy = r.stdout.strip().splitlines()[-2:]
        return text, scipy == "True"

    built, scipy_built = run()
    cached, scipy_cached = run()
    assert (tmp_path / "stylized" / "check-list.json").is_file()
    assert cached == built and scipy_built and not scipy_cached
    assert "--seeds" in built and "mixing" in built
    assert run(STYLIZED_NO_CACHE="1") == (built, True)
    import json

    path = tmp_path / "stylized" / "check-list.json"
    path.write_text(json.dumps({"key": "stale", "text": "wrong"}))
    assert run() == (built, True)  # a stale key: rebuilt, never the stale text
