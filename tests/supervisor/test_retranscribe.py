"""``retranscribe`` of an attempt the reader ended on an over-long line (BC-03).

Rule (docs/batch.md "Session states", BC-03): a line over the reader's cap ends the
session ``line-too-long``, its reason naming the line and its size as the reader saw
them. The kept stream holds the line cut at the cap, so re-reading it cannot tell its
size: the re-derived record keeps the reason the runner wrote, once, word for word.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from campaign.batch._config import read_plan
from campaign.batch._ledger import read_ledger
from campaign.batch._record_parts import GatewayCounts
from campaign.batch._records import FinalRecord
from campaign.corpus._corpus import load_corpus
from campaign.supervisor._retranscribe import rederive
from tests.conftest import FIXTURES

FORMAT2 = FIXTURES / "batches" / "format2"
REASON = ("line-too-long: stdout line 9 is at least 67108864 bytes, over the line cap of "
          "67108864 bytes")


def test_a_line_too_long_attempt_keeps_the_readers_words_once(tmp_path: Path) -> None:
    shutil.copytree(FORMAT2, tmp_path / "format2")
    batch = tmp_path / "format2" / "batch"
    final = next(r for r in read_ledger(batch / "ledger.jsonl")
                 if isinstance(r, FinalRecord) and r.state == "recorded")
    cut = final.model_copy(update={"state": "line-too-long", "reason": REASON,
                                   "end": "line-too-long", "event": None, "exit_status": -15})
    redone = rederive(cut, batch=batch, plan=read_plan(batch),
                      corpus=load_corpus(tmp_path / "format2" / "corpus"))
    assert (redone.state, redone.reason) == ("line-too-long", REASON)
    assert redone.event is None and redone.calls  # the calls seen before the line are kept


def _recorded(tmp_path: Path) -> tuple[Path, FinalRecord]:
    shutil.copytree(FORMAT2, tmp_path / "format2")
    batch = tmp_path / "format2" / "batch"
    return batch, next(r for r in read_ledger(batch / "ledger.jsonl")
                       if isinstance(r, FinalRecord) and r.state == "recorded")


def _counts(**given: object) -> GatewayCounts:
    return GatewayCounts.model_validate({"forwarded": 2, "refused": {},
                                         "provider_cost_usd": "0.0195", "prices": "2025-11-24",
                                         **given})


def test_a_state_the_gateway_decided_stays_the_ledgers_not_the_streams(tmp_path: Path) -> None:
    # docs/batch.md "Session states": a budget refusal ends the attempt budget-stopped and a
    # login the gateway could not use ends it harness-error, whatever the stream says; the
    # stream holds only the harness's side, so check-transcript --batch and retranscribe
    # took the stream's state (harness-error, or here recorded) and refused or rewrote it.
    batch, final = _recorded(tmp_path)
    plan, corpus = read_plan(batch), load_corpus(tmp_path / "format2" / "corpus")
    stopped = final.model_copy(update={
        "state": "budget-stopped", "reason": "budget-stopped: the gateway refused 6",
        "retryable": True, "event": None, "gateway": _counts(refused={"budget": 6})})
    redone = rederive(stopped, batch=batch, plan=plan, corpus=corpus)
    assert (redone.state, redone.reason) == ("budget-stopped", stopped.reason)
    assert redone.event is None and redone.calls
    login = final.model_copy(update={
        "state": "harness-error", "reason": "harness-error: the login expired", "event": None,
        "gateway": _counts(login_failure="expired")})
    redone = rederive(login, batch=batch, plan=plan, corpus=corpus)
    assert (redone.state, redone.reason) == ("harness-error", login.reason)
    # Refusals of another kind leave the stream to decide, as the live verdict does.
    other = final.model_copy(update={"gateway": _counts(refused={"path /x": 1})})
    assert rederive(other, batch=batch, plan=plan, corpus=corpus).state == "recorded"
