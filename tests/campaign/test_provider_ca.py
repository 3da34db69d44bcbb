"""``--provider-ca FILE``: the provider's TLS is checked against this CA (docs/cli.md).

Rule: a file that is missing, not a regular file, unreadable or without a PEM CA
certificate stops the command with exit 2 and a message that names the file and says
what it is for, before any batch is made or any session runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from campaign.cli._context import provider_ca_file
from campaign.cli._errors import UsageError
from tests.campaign.batch_fixture import cli, fixture_copy


def test_a_readable_file_is_taken_resolved_and_none_means_the_systems(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    trustme.CA().cert_pem.write_to_path(str(ca))
    assert provider_ca_file(None) is None
    assert provider_ca_file(Path(os.path.relpath(ca))) == ca.resolve()


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_a_file_that_cannot_be_read_is_a_usage_error_naming_it(tmp_path: Path,
                                                                 kind: str) -> None:
    ca = tmp_path / "ca.pem"
    if kind == "directory":
        ca.mkdir()
    with pytest.raises(UsageError) as caught:
        provider_ca_file(ca)
    message = str(caught.value)
    assert message.startswith(f"--provider-ca {ca}: cannot be read")
    assert "TLS certificate is checked against" in message


@pytest.mark.parametrize("text", ["not a certificate\n", "-----BEGIN CERTIFICATE-----\n"])
def test_a_file_without_a_pem_certificate_is_a_usage_error_naming_it(tmp_path: Path,
                                                                       text: str) -> None:
    ca = tmp_path / "hostname"
    ca.write_text(text)
    with pytest.raises(UsageError) as caught:
        provider_ca_file(ca)
    assert str(caught.value).startswith(f"--provider-ca {ca}: holds no CA certificate in PEM")


@pytest.mark.parametrize("command", ["demo", "run"])
def test_the_commands_that_run_sessions_stop_with_exit_2_before_any_batch(
        tmp_path: Path, command: str) -> None:
    batch = tmp_path / "b"
    missing = tmp_path / "nowhere.pem"
    corpus = Path(__file__).resolve().parents[2] / "demo" / "example" / "corpus"
    args = [command, *([str(corpus)] if command == "run" else []),
            "--provider-ca", str(missing), "--batch-dir", str(batch)]
    proc = subprocess.run([sys.executable, "-m", "campaign", *args], capture_output=True,
                          text=True, timeout=120, check=False,
                          env={**os.environ, "HW_KEY": "k"})
    assert proc.returncode == 2, proc.stderr
    assert f"--provider-ca {missing}: cannot be read" in proc.stderr
    assert "Traceback" not in proc.stderr and not batch.exists()



@pytest.fixture
def finished() -> Iterator[Path]:
    """A copy of a finished batch (format 1: every session final), its corpus beside it."""
    yield from fixture_copy("format1")


def test_resume_of_a_finished_batch_checks_the_file_as_a_run_does(tmp_path: Path,
                                                                   finished: Path) -> None:
    # Nothing is left to run, but a bad --provider-ca is still bad input: exit 2, named,
    # and the batch is not written (its ledger as it was).
    batch, corpus, missing = finished / "batch", finished / "corpus", tmp_path / "nowhere.pem"
    before = (batch / "ledger.jsonl").read_bytes()
    run = cli("resume", str(batch), "--corpus", str(corpus), "--provider-ca", str(missing))
    assert run.returncode == 2, run.stdout + run.stderr
    assert f"--provider-ca {missing}: cannot be read" in run.stderr
    assert "nothing to resume" not in run.stdout
    assert (batch / "ledger.jsonl").read_bytes() == before
    fine = cli("resume", str(batch), "--corpus", str(corpus))
    assert fine.returncode == 0 and "nothing to resume" in fine.stdout
