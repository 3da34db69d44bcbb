"""Nothing a session is told names its condition: the requests the real CLI sent, as logged.

Every session is the subject of a measurement, so no request it sends the
model may name its arm, probe, session or batch. ``demo`` runs the bundled
corpus (arms present and absent, four probes, two repetitions: 16 real
sessions under real bwrap) into a batch directory named ``absent-HW-PRB-0003``,
an arm and a probe, so that any path under it that reaches a request shows.
The scripted provider's request log (docs/provider.md) holds every request;
the kept streams hold every init line. The names looked for are the batch's
own, read from its ledger, never from what the runner printed.
"""

from __future__ import annotations

import collections
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from campaign.supervisor._streams import stream_lines
from demo import REQUEST_LOG_ENV
from tests.integration import kit

pytestmark = [pytest.mark.bwrap, pytest.mark.harness, pytest.mark.slow]

BATCH_NAME: Final = "absent-HW-PRB-0003"
"""An arm and a probe of the demo's plan: the batch's own path names a condition."""
CONFIG_ROOT: Final = "/var/tmp/headwater-campaign"
"""Where the runner stages per-session configuration and egress directories (README.md)."""
SCRATCH_PREFIX: Final = "/tmp/headwater-"
"""How a sandbox's scratch directory begins (docs/confinement.md): it holds the session's name."""
CONCURRENCY: Final = "4"
"""Sessions at once: the 16 sessions take about 10 s, half of what the default 2 takes."""
SNIPPET_CHARS: Final = 70
"""Context quoted either side of a leak in a failure message."""


def _munged(path: str) -> str:
    """A path as the CLI names its project directory: every non-alphanumeric character a ``-``."""
    return re.sub(r"[^A-Za-z0-9]", "-", path)


class Names:
    """The batch's conditions and where they live, as matchers of a request's strings."""

    def __init__(self, batch: Path) -> None:
        started = [r for r in kit.ledger_dicts(batch) if r["kind"] == "started"]
        self.arms = sorted({r["arm"] for r in started})
        self.probes = sorted({r["probe"] for r in started})
        self.sessions = sorted({r["session"] for r in started})
        self.config_dirs = {r["init_policy"]["config_dir"] for r in kit.ledger_dicts(batch)
                            if r["kind"] == "final" and "init_policy" in r}
        component = r"(?<=[/_-]){}(?=[/_-]|$)|(?<![A-Za-z0-9]){}(?=[/_-])"
        words = "|".join(map(re.escape, self.arms))
        self.matchers: dict[str, re.Pattern[str]] = {
            # "present" and "absent" are English in the CLI's prompt ("Present continuous
            # form", "may be absent in headless runs"): an arm leaks as a path component or
            # joined by - or _ (a staging directory's name, a munged project path).
            "arm": re.compile(component.format(f"(?:{words})", f"(?:{words})"), re.IGNORECASE),
            "probe": re.compile("|".join(map(re.escape, self.probes))),
            "session": re.compile("|".join(
                component.format(re.escape(s), re.escape(s)) for s in self.sessions)),
            "batch": re.compile(f"{re.escape(str(batch))}|{re.escape(_munged(str(batch)))}"),
            "sessions dir": re.compile(r"/sessions/|-sessions-"),
            "config root": re.compile(
                f"{re.escape(CONFIG_ROOT)}|{re.escape(_munged(CONFIG_ROOT))}"),
            "scratch": re.compile(re.escape(SCRATCH_PREFIX)),
            # The names the runner gives a session's host directories, wherever they lie:
            # a config directory <runner tag>-session-<random>, a store <runner tag>-<random>
            # (tag <pid>.<start>.<ns>, older <pid>.<start> or <pid>).
            "staging": re.compile(r"(?<![0-9A-Za-z.])[0-9]+(?:\.[0-9]+){0,2}-session-"
                                  r"[A-Za-z0-9_]{8}|(?<![0-9A-Za-z.])[0-9]+\.[0-9]+(?:\.[0-9]+)?-"
                                  r"[A-Za-z0-9_]{8}(?![A-Za-z0-9_])"),
        }

    def first(self, text: str) -> Iterator[int]:
        """Where each matcher first matches in ``text``."""
        for pattern in self.matchers.values():
            if match := pattern.search(text):
                yield match.start()

    def leaks(self, text: str) -> Iterator[tuple[str, str]]:
        """``(matcher, snippet)`` for each condition-naming match in ``text``."""
        for what, pattern in self.matchers.items():
            for match in pattern.finditer(text):
                lo, hi = max(0, match.start() - SNIPPET_CHARS), match.end() + SNIPPET_CHARS
                yield what, text[lo:hi]


def _strings(value: Any) -> Iterator[str]:
    """Every string value in a parsed JSON value, depth first (keys are the API's schema)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _init_lines(batch: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    for stream in sorted(batch.glob("sessions/*/*/*/attempt-*/stdout.jsonl.zst")):
        for line, _ in stream_lines(stream):
            event = json.loads(line)
            if event.get("type") == "system" and event.get("subtype") == "init":
                yield stream.relative_to(batch), event


class Blind:
    """The demo batch, its request log, its names, and which CLI session ran which condition."""

    def __init__(self, batch: Path, log: Path) -> None:
        self.batch = batch
        self.names = Names(batch)
        self.requests = [json.loads(line) for line in log.read_bytes().splitlines()]
        # The CLI's session id heads its init line and is the X-Claude-Code-Session-Id of
        # its requests; the kept stream's place names the condition (docs/batch.md layout).
        self.conditions: dict[str, tuple[str, str, str]] = {
            event["session_id"]: (where.parts[1], where.parts[2], where.parts[3])
            for where, event in _init_lines(batch)}


@pytest.fixture(scope="module")
def blind(bwrap: str, harness: Path) -> Iterator[Blind]:
    with kit.host_dir("hw-blind-") as root:  # outside $HOME (RC-06) and outside /tmp
        batch, log = root / BATCH_NAME, root / "requests.jsonl"
        proc = kit.cli("demo", "--batch-dir", str(batch), "--harness", str(harness),
                       "--concurrency", CONCURRENCY,
                       env=kit.base_env(**{REQUEST_LOG_ENV: str(log)}))
        assert proc.returncode == 0, f"demo exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        yield Blind(batch.resolve(), log)


@pytest.mark.timeout(600)
def test_the_log_holds_requests_of_every_session_of_the_plan(blind: Blind) -> None:
    # The plan: 2 arms x 4 probes x 2 repetitions; each session sends at least its first turn.
    names = blind.names
    assert (names.arms, names.sessions) == (["absent", "present"], ["s1", "s2"])
    assert len(names.probes) == 4
    assert all("body" in r and r["body"] is not None for r in blind.requests)
    # Every session saw its configuration directory at the one fixed path (RC-02).
    assert names.config_dirs == {"/run/headwater/config"}
    assert {r["session"] for r in blind.requests} == set(blind.conditions)
    assert len(blind.conditions) == 16


@pytest.mark.timeout(600)
def test_no_request_names_an_arm_probe_session_or_the_batch(blind: Blind) -> None:
    # Grouped by where in the prompt a leak sits: the words before a line's first match.
    places: dict[str, tuple[set[str], set[str], str]] = {}
    for request in blind.requests:
        for text in (ln for string in _strings(request["body"]) for ln in string.splitlines()):
            hits = list(blind.names.leaks(text))
            if not hits:
                continue
            start = min(blind.names.first(text))
            place = re.sub(r"\d", "#", " ".join(text[max(0, start - 40):start].split()))
            matchers, sessions, _ = places.setdefault(place, (set(), set(), text[
                max(0, start - SNIPPET_CHARS):start + 2 * SNIPPET_CHARS]))
            matchers.update(what for what, _ in hits)
            sessions.add(request["session"])
    assert not places, f"{len(places)} places in the requests name a condition:\n" + "\n".join(
        f"after {place!r} ({len(sessions)} sessions; {', '.join(sorted(matchers))}):\n"
        f"    {example!r}" for place, (matchers, sessions, example) in sorted(places.items()))


_FINGERPRINT = re.compile(r"(x-anthropic-billing-header: cc_version=[0-9.]+)\.[0-9a-f]{3};")
_DATE_LINE = re.compile(r"^Today's date is \d{4}-\d{2}-\d{2}\.$", re.MULTILINE)


def _system(body: dict[str, Any]) -> str:
    """The request's ``system`` blocks, without what legitimately varies between sessions.

    Taken out: the three hex digits the CLI appends to its version in the billing
    header block. They are a fingerprint of the first user message (the task): in
    the logged requests they are one value per probe, the same in both arms and
    both repetitions, so they tell the model nothing its task does not. The date
    line goes too, should the CLI move it into ``system`` (2.1.197 sends it in the
    first user message): a batch may run across midnight. Nothing else is
    taken out: the CLI's session id and device id ride in ``metadata``, not here.
    """
    text = json.dumps(body["system"], ensure_ascii=False, indent=0)
    return _DATE_LINE.sub("", _FINGERPRINT.sub(r"\1;", text))


def _context(body: dict[str, Any]) -> str:
    """The reminder block the first user message opens with (CLAUDE.md, the date), dateless."""
    first = next(m for m in body["messages"] if m["role"] == "user")
    return _DATE_LINE.sub("", str(first["content"][0]["text"]))


@pytest.mark.timeout(600)
def test_system_prompts_are_byte_identical_across_probes_and_arms(blind: Blind) -> None:
    # What the arms change (config.yaml's layer digests): present keeps the corpus's
    # CLAUDE.md, skill and hook, absent removes them. The pinned CLI puts CLAUDE.md in the
    # first user message's reminder and the skills in a later message, never in ``system``,
    # so ``system`` is compared across arms too; the reminder only within an arm.
    systems: dict[tuple[str, str], set[str]] = collections.defaultdict(set)
    contexts: dict[str, set[str]] = collections.defaultdict(set)
    for request in blind.requests:
        body = request["body"]
        arm, probe, _ = blind.conditions[request["session"]]
        systems[arm, probe].add(_system(body))
        contexts[arm].add(_context(body))
    assert len(systems) == 8, sorted(systems)  # two arms x four probes, each seen
    everything = set().union(*systems.values())
    assert len(everything) == 1, _first_difference(sorted(everything))
    for arm, seen in contexts.items():
        assert len(seen) == 1, f"arm {arm}: " + _first_difference(sorted(seen))


def _first_difference(texts: list[str]) -> str:
    """Where the first two of ``texts`` part, quoted from each."""
    a, b = texts[0], texts[1]
    at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
              min(len(a), len(b)))
    lo = max(0, at - SNIPPET_CHARS)
    return (f"{len(texts)} distinct; they part at {at}:\n  {a[lo:at + SNIPPET_CHARS]!r}\n"
            f"  {b[lo:at + SNIPPET_CHARS]!r}")


@pytest.mark.timeout(600)
def test_every_init_line_shows_one_cwd_and_memory_path_naming_nothing(blind: Blind) -> None:
    inits = list(_init_lines(blind.batch))
    assert len({where.parts[:4] for where, _ in inits}) == 16  # every session's stream
    cwds = {event["cwd"] for _, event in inits}
    memories = {json.dumps(event["memory_paths"], sort_keys=True) for _, event in inits}
    leaks = [(what, snippet) for text in cwds | memories
             for what, snippet in blind.names.leaks(text)]
    assert not leaks, "\n".join(f"{what}: {snippet!r}" for what, snippet in leaks[:12])
    assert len(cwds) == 1, sorted(cwds)[:4]
    assert len(memories) == 1, sorted(memories)[:4]


@pytest.mark.timeout(600)
def test_every_init_line_shows_the_default_workspace_path_and_the_prose_names_it(
        blind: Blind) -> None:
    """The default workspace path is /workspace/<the corpus root's directory name> (the demo's
    corpus is demo/example/corpus), and each transcript's prose says where the sessions ran."""
    assert {event["cwd"] for _, event in _init_lines(blind.batch)} == {"/workspace/corpus"}
    for arm in blind.names.arms:
        prose = (blind.batch / "transcripts" / f"{arm}.md").read_text(encoding="utf-8")
        assert "Every session saw its workspace at /workspace/corpus" in prose


@pytest.mark.timeout(600)
def test_no_value_of_an_init_line_names_a_condition(blind: Blind) -> None:
    """Every string an init line carries, not only ``cwd`` and ``memory_paths``: the pin
    (2.1.332) adds paths (``original_cwd``, ``messaging_socket_path``, the entries of
    ``additional_directories``), and none may name an arm, probe, session or the batch."""
    inits = list(_init_lines(blind.batch))
    assert len(inits) >= 16
    leaks = [(str(where), what, snippet) for where, event in inits
             for text in _strings(event) for what, snippet in blind.names.leaks(text)]
    assert not leaks, "\n".join(map(str, leaks[:12]))
    for where, event in inits:
        if "original_cwd" in event:  # 2.1.332: the workspace path, as cwd
            assert event["original_cwd"] == event["cwd"], where
        if "messaging_socket_path" in event:  # inside the sandbox's private /tmp
            assert str(event["messaging_socket_path"]).startswith("/tmp/"), where


@pytest.mark.timeout(600)
def test_the_sessions_asked_the_provider_for_messages_only(blind: Blind) -> None:
    """What the CLI calls besides the Messages API would need an answer of the scripted
    provider (docs/provider.md); 2.1.197 and 2.1.332 were seen to call nothing else."""
    paths = collections.Counter(str(request.get("path")) for request in blind.requests)
    assert set(paths) == {"/v1/messages?beta=true"}, paths
