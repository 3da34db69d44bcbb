"""``--max-stdout SIZE`` (docs/cli.md): accepted where the other per-session limits are, at
least its floor, recorded in config.yaml, and a batch written before it reads with the
default."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from campaign.batch._config import CONFIG_FORMAT, read_config
from campaign.cli._args import NewBatchArgs, batch_options
from campaign.cli._parser import parse_command
from sandbox.cgroup import DEFAULT_STDOUT_BYTES, MIN_STDOUT_BYTES, Limits

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "demo" / "example" / "corpus"
FORMAT1 = REPO / "tests" / "fixtures" / "batches" / "format1" / "batch"
MiB = 1024 * 1024


def test_the_default_is_256_mib_and_the_floor_4_mib() -> None:
    # docs/cli.md "Defaults": the numbers the docs give.
    assert (256 * MiB, 4 * MiB) == (DEFAULT_STDOUT_BYTES, MIN_STDOUT_BYTES)


@pytest.mark.parametrize("command", [
    ["run", str(EXAMPLE)],
    ["record", "--corpus", str(EXAMPLE), "--probe", "HW-PRB-0001", "--arm", "present",
     "--batch-dir", "/var/tmp/x"],
])
def test_run_and_record_take_it_into_the_sessions_limits(command: list[str]) -> None:
    args = parse_command([*command, "--max-stdout", "8M"]).args
    assert isinstance(args, NewBatchArgs) and command[0] == args.COMMAND
    options = batch_options(args, corpus=EXAMPLE, tier="campaign", harness_path=Path("/bin/true"),
                            model="m")
    assert options.max_stdout_bytes == 8 * MiB
    assert options.session_limits().stdout_bytes == 8 * MiB


def test_not_given_it_is_the_default() -> None:
    args = parse_command(["run", str(EXAMPLE)]).args
    assert isinstance(args, NewBatchArgs)
    options = batch_options(args, corpus=EXAMPLE, tier="campaign", harness_path=Path("/bin/true"),
                            model="m")
    assert options.session_limits().stdout_bytes == DEFAULT_STDOUT_BYTES


@pytest.mark.parametrize("size", ["1M", "4194303", "0"])
def test_below_the_floor_is_a_usage_error_naming_the_option(size: str, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "campaign", "run", str(EXAMPLE),
                           "--max-stdout", size, "--batch-dir", str(tmp_path / "b")],
                          capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "HW_KEY": "k"})
    assert proc.returncode == 2, proc.stderr
    assert "--max-stdout" in proc.stderr and "at least" in proc.stderr
    assert not (tmp_path / "b").exists()


def test_the_floor_itself_is_accepted() -> None:
    args = parse_command(["run", str(EXAMPLE), "--max-stdout", "4M"]).args
    assert isinstance(args, NewBatchArgs)
    assert args.max_stdout_bytes == MIN_STDOUT_BYTES


def test_the_limits_refuse_a_bound_below_the_floor() -> None:
    with pytest.raises(ValueError, match="stdout_bytes"):
        Limits(stdout_bytes=MIN_STDOUT_BYTES - 1)


def test_a_batch_recorded_before_the_option_reads_with_the_default(tmp_path: Path) -> None:
    """The format-1 fixture, and the same config as format 2, have no ``max_stdout_bytes``."""
    yaml = YAML()
    data = yaml.load((FORMAT1 / "config.yaml").read_text())
    assert "max_stdout_bytes" not in data["options"]
    assert read_config(FORMAT1).options.session_limits().stdout_bytes == DEFAULT_STDOUT_BYTES
    data["format"] = CONFIG_FORMAT
    data["options"]["workspace_path"] = "/workspace/corpus"
    batch = tmp_path / "batch"
    batch.mkdir()
    with (batch / "config.yaml").open("w") as fh:
        yaml.dump(data, fh)
    options = read_config(batch).options
    assert options.max_stdout_bytes == DEFAULT_STDOUT_BYTES


def test_the_recorded_value_is_read_back(tmp_path: Path) -> None:
    yaml = YAML()
    data = yaml.load((FORMAT1 / "config.yaml").read_text())
    data["options"]["max_stdout_bytes"] = 16 * MiB
    batch = tmp_path / "batch"
    shutil.copytree(FORMAT1, batch, ignore=shutil.ignore_patterns("sessions", "*.md"))
    with (batch / "config.yaml").open("w") as fh:
        yaml.dump(data, fh)
    assert read_config(batch).options.session_limits().stdout_bytes == 16 * MiB
