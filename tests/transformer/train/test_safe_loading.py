"""A crafted checkpoint cannot run code: every torch.load uses weights_only=True; no silent overwrite."""

from __future__ import annotations

import pickle

import pytest

torch = pytest.importorskip("torch")

from simulations.transformer import cli  # noqa: E402
from simulations.transformer.paths import checkpoint_path  # noqa: E402
from simulations.transformer.train.loop import load_model  # noqa: E402
from stylized import InvalidInput  # noqa: E402


class _Payload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_malicious_checkpoint_runs_nothing(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    torch.save({"model": _Payload(marker)}, path, pickle_protocol=pickle.HIGHEST_PROTOCOL)
    with pytest.raises(InvalidInput, match="is not a stylized checkpoint"):
        load_model(path, "cpu")
    assert not marker.exists()


def test_train_refuses_to_overwrite_without_resume_or_force(tmp_path, capsys):
    path = checkpoint_path("smoke", "rope", 0, tmp_path)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"x")
    with pytest.raises(SystemExit) as e:
        cli.main(["train", "--variant", "rope", "--results-dir", str(tmp_path)])
    assert e.value.code == 2 and "--resume" in capsys.readouterr().err
    assert path.read_bytes() == b"x"


def test_smoke_outputs_never_land_in_the_committed_folders():
    """Non-cpu presets write under results/transformer/runs/<preset>/ (figures included)."""
    from simulations.transformer.bridge.run import output_root
    from simulations.transformer.c6.compare import output_paths
    from simulations.transformer.paths import results_root
    from stylized.harness.results import figures_dir

    root, fig, canonical = output_paths("smoke", None, None)
    assert root == results_root() / "runs" / "smoke" and fig.parent == root and not canonical
    assert output_paths("cpu", None, None) == (results_root(), figures_dir() / "transformer_ppl_ratio.png", True)
    assert output_root(None, "smoke") == results_root() / "runs" / "smoke"
