"""``Preset.from_name``: overrides go to the config that has the field, a bad name is refused naming it, and the
settings a result records are those the committed results were written with."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from simulations.transformer.model.presets import PRESETS, Preset
from stylized.core.errors import InvalidInput

RESULTS = Path(__file__).resolve().parents[3] / "simulations" / "results" / "transformer"


def test_overrides_go_to_their_config_and_none_keeps_the_preset():
    p = Preset.from_name("cpu", variant="learned-qk", steps=5, angle_lr_mult=1.0, n_windows=4, data=None)
    assert (p.model.variant, p.model.angle_lr_mult, p.train.steps, p.eval.n_windows) == ("learned-qk", 1.0, 5, 4)
    assert p.train.data is None and p.model.block_size == 64 and p.train.lr == 2e-3
    assert p.with_variant("rope").model == dataclasses.replace(p.model, variant="rope")


def test_bad_names_are_refused_naming_them():
    with pytest.raises(ValueError, match=r"^bogus= is not a config field$"):
        Preset.from_name("smoke", bogus=1)
    with pytest.raises(ValueError, match="preset='huge' is not one of: smoke, cpu"):
        Preset.from_name("huge")
    with pytest.raises(ValueError, match="steps=0 must be a positive integer"):
        Preset.from_name("smoke", steps=0)
    with pytest.raises(InvalidInput, match="--bpe-vocab 300 with --tokenizer bytes"):
        Preset.from_name("smoke", bpe_vocab=300)


def test_the_configs_are_built_once_and_frozen():
    p = Preset.from_name("smoke")
    for obj, name in ((p, "name"), (p.model, "n_layer"), (p.train, "steps"), (p.eval, "n_windows")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, name, 1)
    p.record()["eval"]["multiples"].append(8)  # the record is a copy: neither the preset nor its table moves
    assert p.eval.multiples == PRESETS["smoke"]["eval"]["multiples"] == [1, 2, 4]


@pytest.mark.parametrize("name", list(PRESETS))
def test_the_record_is_the_table(name):
    assert Preset.from_name(name).record() == PRESETS[name]


@pytest.mark.parametrize("path", ["cpu_compare.json", "runs/cpu-long/cpu-long_compare.json"])
def test_the_record_is_what_the_committed_comparison_wrote(path):
    """The comparison's ``params`` (model, training with the run's steps and data, evaluation) from the record:
    the same JSON text, so the committed evaluation caches are still found."""
    file = RESULTS / path
    if not file.exists():
        pytest.skip(f"{file} is not in this checkout")
    params = json.loads(file.read_text(encoding="utf-8"))["params"]
    p = Preset.from_name(params["preset"])
    record = p.record()
    train = {**record["train"], "steps": p.train.steps, "data": p.train.data or "builtin"}
    assert json.dumps([record["model"], train, record["eval"]]) == json.dumps(
        [params["model"], params["train"], params["eval"]])
