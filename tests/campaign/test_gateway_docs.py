"""docs/gateway.md names what the demo's gateway forwards with, as the code has it.

A reader of the demo's spend must be able to tell that it was not billed: the page names
the fixed key the gateway puts in against the scripted provider, and that key must be the
one the command line gives the gateway (`campaign.batch.SCRIPTED_API_KEY`), not a value
that has drifted from it.
"""

from __future__ import annotations

from pathlib import Path

from campaign.batch import SCRIPTED_API_KEY
from campaign.batch._open import provider_note
from campaign.batch._options import BatchOptions
from campaign.cli._batch import credentials_for

GATEWAY_DOC = Path(__file__).resolve().parents[2] / "docs" / "gateway.md"


def test_the_gateway_page_names_the_key_the_demo_forwards_with() -> None:
    text = " ".join(GATEWAY_DOC.read_text(encoding="utf-8").split())
    assert f"`{SCRIPTED_API_KEY}`" in text
    assert "nothing is billed" in text


def _options(**given: str) -> BatchOptions:
    return BatchOptions(command="demo", corpus="/c", tier="campaign", seed=0,
                        harness_path="/h", **given)


def test_the_scripted_provider_gets_that_key_and_no_host_credential() -> None:
    credentials = credentials_for(_options(provider="scripted", scripts="/s"))
    assert credentials.api_key == SCRIPTED_API_KEY
    assert credentials.credentials_file is None and credentials.api_key_env is None


def test_the_scripted_provider_note_says_nothing_was_billed() -> None:
    # Every transcript's prose carries this note: its cost sentence prices the scripted
    # turns, and only the note tells a reader that no bill stands behind the figure.
    scripted = provider_note(_options(provider="scripted", scripts="/s"), "http://x")
    assert "Nothing was billed" in scripted
    real = provider_note(_options(provider="anthropic"), "https://a")
    assert "billed" not in real
