"""Names in code, keys on disk: ``Plan.runner_version`` is plan.yaml's ``harness`` (the
runner's version) and ``BatchOptions.harness_path`` is config.yaml's ``options.harness`` (the
claude executable). Renaming them in code changed no key: the fixture batches of both formats
read with their values, and write back as they are."""

from __future__ import annotations

from pathlib import Path

import pytest
from ruamel.yaml import YAML

from campaign.batch._config import (
    CONFIG_NAME,
    PLAN_NAME,
    read_config,
    read_plan,
    write_config,
    write_plan,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "batches"


def _yaml(path: Path) -> dict[str, object]:
    data = YAML(typ="safe").load(path.read_text())
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize("fmt", ["format1", "format2"])
def test_the_renamed_fields_read_the_keys_as_written(fmt: str) -> None:
    batch = FIXTURES / fmt / "batch"
    options = _yaml(batch / CONFIG_NAME)["options"]
    assert isinstance(options, dict)
    assert read_config(batch).options.harness_path == options["harness"]
    assert read_plan(batch).runner_version == _yaml(batch / PLAN_NAME)["harness"]


@pytest.mark.parametrize("fmt", ["format1", "format2"])
def test_a_fixture_writes_back_with_its_own_keys(fmt: str, tmp_path: Path) -> None:
    batch = FIXTURES / fmt / "batch"
    write_plan(tmp_path, read_plan(batch))
    assert (tmp_path / PLAN_NAME).read_bytes() == (batch / PLAN_NAME).read_bytes()
    write_config(tmp_path, read_config(batch))
    if fmt == "format2":  # written by this format: byte for byte
        assert (tmp_path / CONFIG_NAME).read_bytes() == (batch / CONFIG_NAME).read_bytes()
    # Format 1 predates some keys, which are written with their defaults; every key it has
    # is written as it was.
    before, after = _yaml(batch / CONFIG_NAME), _yaml(tmp_path / CONFIG_NAME)
    for section in ("options", "facts"):
        old, new = before[section], after[section]
        assert isinstance(old, dict) and isinstance(new, dict)
        assert {k: new.get(k) for k in old} == old


def test_a_file_that_spells_a_key_by_its_code_name_is_refused(tmp_path: Path) -> None:
    """The files' key sets stay closed: the code's names are not keys of theirs."""
    from campaign.batch import BatchFileError

    batch = FIXTURES / "format2" / "batch"
    plan = (batch / PLAN_NAME).read_text()
    assert "\nharness: " in plan
    (tmp_path / PLAN_NAME).write_text(plan.replace("\nharness: ", "\nrunner_version: "))
    with pytest.raises(BatchFileError, match="runner_version"):
        read_plan(tmp_path)
    config = (batch / CONFIG_NAME).read_text()
    assert "\n  harness: " in config
    (tmp_path / CONFIG_NAME).write_text(config.replace("\n  harness: ", "\n  harness_path: "))
    with pytest.raises(BatchFileError, match="harness_path"):
        read_config(tmp_path)
