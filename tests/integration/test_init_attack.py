"""Init lines crafted to slip past RC-07's policing of the widening fields, run through `record`.

Each stand-in harness (tests/standin.py) prints a crafted init line, then a valid session, under
real bwrap; the rule (docs/glossary.md RC-07) says the session ends ``refused-init`` (exit 12)
whenever any init line of it widens what the session reaches, whatever else the line says.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.test_record_standins import (
    ANSWERED,
    READ,
    WIDENING_CLEAN,
    check_session,
    init,
    make_corpus,
    record,
    result,
)
from tests.standin import write_standin

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(120)]

@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return make_corpus(tmp_path / "corpus")


CLEAN = init(**WIDENING_CLEAN)
"""A 2.1.332 init line granting nothing (recorded alone)."""


def test_a_second_init_line_after_the_result_that_widens_is_refused(
        tmp_path: Path, corpus: Path, bwrap: str) -> None:
    """RC-07 holds every init line: a clean first one, a whole session, then (in the grace
    after the result, as after a background task) a second one granting a directory."""
    widened = init(**{**WIDENING_CLEAN, "additional_directories": ["/etc"]})
    harness = write_standin(tmp_path / "claude", stdout=CLEAN + READ + ANSWERED + result(),
                            later=[(0.2, widened + result())])
    final = check_session(record(corpus, tmp_path / "b", harness), tmp_path / "b",
                          state="refused-init", status=12)
    assert final["reason"].startswith("additional_directories[0] = '/etc'"), final["reason"]


def test_a_duplicated_policed_key_is_refused_whichever_copy_a_reader_keeps(
        tmp_path: Path, corpus: Path, bwrap: str) -> None:
    """RC-07 fails closed on a shape it does not know: an init line printing a policed key
    twice (a first-wins reader sees ``["/etc"]``, a last-wins one ``[]``) is refused, in
    either order, naming the key; the real harness never repeats a key."""
    clean = CLEAN.rstrip(b"}\n")
    for repeated in (b', "additional_directories": ["/etc"]}\n',
                     b', "sandbox_enabled": true}\n'):
        batch = tmp_path / f"b{len(repeated)}"
        harness = write_standin(tmp_path / "claude",
                                stdout=clean + repeated + READ + ANSWERED + result())
        final = check_session(record(corpus, batch, harness), batch,
                              state="refused-init", status=12)
        key = repeated.split(b'"')[1].decode()
        assert f"{key} is printed twice" in final["reason"], final["reason"]
    swapped = CLEAN.replace(b'"additional_directories": []',
                            b'"additional_directories": ["/etc"], "additional_directories": []')
    assert swapped != CLEAN
    harness = write_standin(tmp_path / "claude", stdout=swapped + READ + ANSWERED + result())
    final = check_session(record(corpus, tmp_path / "s", harness), tmp_path / "s",
                          state="refused-init", status=12)
    assert "additional_directories is printed twice" in final["reason"], final["reason"]


def test_a_socket_path_with_a_nul_is_refused(tmp_path: Path, corpus: Path, bwrap: str) -> None:
    """RC-07: a messaging socket path is an absolute path under /tmp/; one holding a NUL is no
    path the kernel binds as written (it cuts at the NUL), so it refuses (fail closed)."""
    line = init(**{**WIDENING_CLEAN, "messaging_socket_path": "/tmp/\x00/../run/x"})
    harness = write_standin(tmp_path / "claude", stdout=line + READ + ANSWERED + result())
    final = check_session(record(corpus, tmp_path / "b", harness), tmp_path / "b",
                          state="refused-init", status=12)
    assert final["reason"].startswith("messaging_socket_path = '/tmp/\\x00/../run/x'"), \
        final["reason"]


def test_a_version_in_other_digits_requires_every_widening_field(
        tmp_path: Path, corpus: Path, bwrap: str) -> None:
    """RC-07: a ``claude_code_version`` not ``MAJOR.MINOR.PATCH`` in ASCII digits (here 197 in
    Arabic-Indic digits, which a Unicode-digit pattern would read as 2.1.197) names no release,
    so every policed key is required: a line omitting ``additional_directories`` refuses."""
    fields = {key: value for key, value in WIDENING_CLEAN.items()
              if key != "additional_directories"}
    line = init(**{**fields, "claude_code_version": "2.1.\u0661\u0669\u0667"})
    harness = write_standin(tmp_path / "claude", stdout=line + READ + ANSWERED + result())
    final = check_session(record(corpus, tmp_path / "b", harness), tmp_path / "b",
                          state="refused-init", status=12)
    assert final["reason"].startswith("additional_directories is missing"), final["reason"]
