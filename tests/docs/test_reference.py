"""The API reference reads as reference: aligned docstring blocks become lists, configuration dataclasses get a
table of their fields (docs/griffe_reference.py, the Griffe extension mkdocs.yml loads)."""

import importlib.util
import os

from support import REPO


def extension():
    spec = importlib.util.spec_from_file_location("griffe_reference", os.path.join(REPO, "docs", "griffe_reference.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_aligned_blocks_become_lists_and_code_stays():
    text = (
        "The search side.\n\n"
        "  NoiseTable         float32 N(0, 1) values\n"
        "  Genome             seed chains;\n"
        "                     JSON and bytes\n"
        "Every strategy speaks ask/tell.\n\n"
        "    config = RunConfig(env='pong')   # an example stays code\n"
        "    trainer = Trainer.from_config(config)   # and so does this line\n"
    )
    converted = extension().aligned_blocks_to_lists(text)
    assert "- `NoiseTable`: float32 N(0, 1) values\n- `Genome`: seed chains; JSON and bytes\n\nEvery" in converted
    assert "    config = RunConfig(env='pong')   # an example stays code\n" in converted
    assert extension().aligned_blocks_to_lists("one  line alone\n") == "one  line alone\n"


def test_configuration_fields_get_default_range_and_help():
    row = extension().field_row(
        "sigma", 'hyperparameter(0.002, "mutation power", "the noise scale of a child", scale="log", low=1e-4, high=1.0)'
    )
    assert row == ("sigma", "0.002", "0.0001 to 1.0", "mutation power: the noise scale of a child")
    assert extension().field_row("model", '_setting(FAMILY_DEFAULT, "network")')[1] == "the environment family's"
    assert extension().field_row("x", "dataclasses.field(default_factory=dict)") is None
