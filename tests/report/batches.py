"""Hand-built batches for the report's tests: a real corpus, plan.yaml, config.yaml and a ledger
written with the runner's own writers, holding exactly the attempts a test asks for.

Nothing here computes a figure: the tests compute what they expect from the
definitions, from the attempts they wrote.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from campaign.batch._config import BatchConfig, BatchFacts, OrderFacts, write_config, write_plan
from campaign.batch._ledger import Ledger
from campaign.batch._options import BatchOptions
from campaign.batch._records import FinalRecord, InvocationRecord, StartedRecord, StoppedRecord
from campaign.corpus._corpus import load_corpus
from campaign.plan._plan import Plan, compose_plan
from tests.campaign.corpora import doc, probe_doc, probe_yml, write_files

T0 = dt.datetime(2026, 12, 1, 9, 0, 0, tzinfo=dt.UTC)
DIGEST = "sha256:" + "ab" * 32


def stamp(seconds: float) -> str:
    """RFC 3339 UTC ``seconds`` after `T0`."""
    return (T0 + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def read(path: str) -> dict[str, str]:
    """A Read call of ``path`` (workspace-relative)."""
    return {"tool": "Read", "argument": path, "result": DIGEST}


def grep(pattern: str) -> dict[str, str]:
    """A call that is not a Read."""
    return {"tool": "Grep", "argument": pattern, "result": DIGEST}


class HandBatch:
    """A batch directory under ``root`` whose ledger holds what the test appends.

    Args:
        root: A fresh directory (the corpus and the batch go under it).
        probes: probe id -> (declared answers, examined paths).
        arms: The tier's arms, in order.
        repetitions: The tier's repetitions.
        seed: The plan's seed (batches with other seeds do not merge).
        name: The batch directory's name under ``root``.
        model: The model passed (``--model``); None: probe.yml's.
        tasks: probe id -> its ``## Task`` text (default: ``Do the task.``).
        max_cost_cents: The run's ``--max-cost-cents`` (the batch's budget); None: none.
        hard_wall_s: The run's ``--max-wall`` with ``--hard-wall``, seconds; None: neither.
        command: The command that made the batch (config.yaml's ``options.command``).
    """

    def __init__(self, root: Path, probes: dict[str, tuple[list[str], list[str]]], *,
                 arms: tuple[str, ...] = ("present", "absent"), repetitions: int = 2,
                 seed: int = 0, name: str = "batch", model: str | None = None,
                 tasks: dict[str, str] | None = None,
                 max_cost_cents: int | None = None, hard_wall_s: float | None = None,
                 command: str = "run") -> None:
        files: dict[str, str | bytes] = {
            ".headwater/probe.yml": probe_yml(tiers={"campaign": {
                "arms": list(arms), "repetitions": repetitions}})}
        for n, (probe, (answers, examines)) in enumerate(sorted(probes.items())):
            files[f"docs/probes/p{n}.md"] = probe_doc(
                probe, f"Title of {probe}", answers=answers, examines=examines,
                **({"task": tasks[probe]} if tasks and probe in tasks else {}))
            for i, path in enumerate(examines):
                files.setdefault(path, doc(f"HW-DOC-{n:02d}{i:02d}", "Text.\n"))
        corpus = load_corpus(write_files(root / "corpus", files))
        self.plan: Plan = compose_plan(corpus, tier="campaign", seed=seed)
        if model is not None:  # what --model gives (the plan's model, not a member)
            self.plan = self.plan.model_copy(update={"model": model})
        self.path = root / name
        self.path.mkdir()
        options = BatchOptions(command=command, corpus=str(corpus.root), tier="campaign",
                               seed=seed, harness_path="/opt/claude",
                               max_cost_cents=max_cost_cents, max_wall_s=hard_wall_s,
                               hard_wall=hard_wall_s is not None)
        write_config(self.path, BatchConfig(options=options, facts=BatchFacts(
            runner="headwater-campaign test", harness_version="2.1.197 (Claude Code)",
            network="confined", network_note="verified", provider_note="Provider: a test.",
            arms={}, order=OrderFacts(algorithm="test", seed=seed))))
        write_plan(self.path, self.plan)
        self.ledger = Ledger(self.path / "ledger.jsonl")
        self.ledger.append(InvocationRecord(number=1, command="run", pid=1, runner="test",
                                            retries=2, max_cost_cents=max_cost_cents,
                                            est_session_cents=None, max_wall_s=None))

    def started(self, arm: str, probe: str, rep: int, *, attempt: int = 1,
                at: float = 0.0) -> None:
        """Append a ``started`` record of session ``s<rep>``."""
        self.ledger.append(StartedRecord(arm=arm, probe=probe, session=f"s{rep}",
                                         repetition=rep, attempt=attempt, invocation=1,
                                         position=None, at=stamp(at)))

    def attempt(self, arm: str, probe: str, rep: int, *, state: str = "recorded",
                answer: str | None = None, calls: list[dict[str, str]] | None = None,
                cost: str | None = "0.01", known: bool = True, attempt: int = 1,
                retryable: bool = False, at: float = 0.0, outside: int = 0,
                served: str = "model-a", version: str = "2.1.197",
                network: str = "confined", answer_key: bool = True,
                duration: float = 1.0, produced: list[dict[str, Any]] | None = None,
                ) -> None:
        """Append one attempt of session ``s<rep>``: ``started`` at ``at`` s, ``final`` at
        ``at + duration`` s (after `T0`).

        A recorded attempt carries an event with ``answer`` (unless ``answer_key`` is
        False), ``calls`` (unless None) and ``produced`` (``[]`` unless given).
        """
        self.started(arm, probe, rep, attempt=attempt, at=at)
        event: dict[str, Any] | None = None
        if state == "recorded":
            event = {"probe": probe, "session": f"s{rep}",
                     "produced": [] if produced is None else produced}
            if answer_key:
                event["answer"] = answer
            if calls is not None:
                event["calls"] = calls
        self.ledger.append(FinalRecord(
            arm=arm, probe=probe, session=f"s{rep}", repetition=rep, attempt=attempt,
            invocation=1, started_at=stamp(at), at=stamp(at + duration), state=state,
            reason=f"{state}: a test", retryable=retryable, cost_usd=cost, cost_known=known,
            outside_paths=outside, served_model=served if state == "recorded" else None,
            claude_code_version=version, network=network, event=event))

    def stop(self, reason: str = "done", detail: str = "every session reached a final state",
             outstanding: int = 0) -> None:
        """Append the invocation's ``stopped`` record."""
        self.ledger.append(StoppedRecord(invocation=1, reason=reason, detail=detail,
                                         outstanding=outstanding))

    def close(self) -> Path:
        """Close the ledger; the batch's path."""
        self.ledger.close()
        return self.path
