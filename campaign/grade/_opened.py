"""``opened`` and ``not_opened``: which calls of an event name a document (DESIGN "Grading").

A call names document ``D`` when (RC-10's arguments):

* Read, Edit, Write, MultiEdit or NotebookEdit: its argument (the path, workspace-relative
  when inside) names ``D`` (`document_named`);
* Grep: its argument is ``<pattern> in <path>``; the path names ``D`` (where the pattern
  itself holds `` in ``, every split is tried: a path equal to ``D`` at any split counts);
  a Grep without a path searched the whole workspace and names no document;
* Bash: one of the command's counted words (`read_words`) names ``D``;
* any other tool (Glob, Agent, Skill, MCP tools): never.

Verdicts: no ``calls`` key: not observed for both (RC-12: nothing watched the calls, never a
pass). ``opened``: satisfied by the first call that names ``D`` (the evidence names it), else
unsatisfied (``calls: []`` included). ``not_opened``: unsatisfied by the first call that names
``D`` (named as evidence), else satisfied (the evidence names the event alone: no call did).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from ._model import Evidence, ExpectationKey, ExpectationVerdict, Verdict
from ._names import document_named
from ._shell import read_words

if TYPE_CHECKING:
    from recorder.transcript import Call, Event

PATH_TOOLS: Final = frozenset({"Read", "Edit", "Write", "MultiEdit", "NotebookEdit"})
"""Tools whose argument is the path they touch (RC-10)."""
GREP: Final = "Grep"
BASH: Final = "Bash"
_IN: Final = " in "
PATH_MAX_BYTES: Final = 4096
"""Linux's PATH_MAX: no path a call can open is longer."""


def named_documents(call: Call, workspace_path: str | None) -> set[str]:
    """The corpus-relative documents ``call`` names (module docstring); ``workspace_path``
    is the path every session saw its workspace at (None: unknown)."""
    if call.tool in PATH_TOOLS:
        paths = [call.argument]
    elif call.tool == GREP:
        paths = _grep_paths(call.argument)
    elif call.tool == BASH:
        paths = read_words(call.argument)
    else:
        return set()
    return {d for p in paths if (d := document_named(p, workspace_path)) is not None}


def _grep_paths(argument: str) -> list[str]:
    """Every tail of ``argument`` after a `` in `` no longer than `PATH_MAX_BYTES` characters
    (a longer one names no file): bounded work for a pattern of a million `` in ``."""
    paths = []
    pos = argument.find(_IN, max(0, len(argument) - PATH_MAX_BYTES - len(_IN)))
    while pos >= 0:
        paths.append(argument[pos + len(_IN):])
        pos = argument.find(_IN, pos + 1)
    return paths


def opened_verdicts(event: Event, index: int, key: ExpectationKey, documents: tuple[str, ...],
                    workspace_path: str | None) -> list[ExpectationVerdict]:
    """One verdict per document of ``documents`` for ``key`` (``opened`` or ``not_opened``)
    over the event at ``index`` of its arm's transcript (module docstring)."""
    if "calls" not in event.model_fields_set or event.calls is None:
        return [ExpectationVerdict(key, d, Verdict.NOT_OBSERVED, None,
                                   "the event has no calls key: nothing watched its calls")
                for d in documents]
    first: dict[str, int] = {}
    for number, call in enumerate(event.calls):
        for document in named_documents(call, workspace_path):
            first.setdefault(document, number)
    verdicts = []
    for document in documents:
        if document not in first:
            verdicts.append(_unnamed(key, document, index, len(event.calls)))
            continue
        number = first[document]
        call = event.calls[number]
        said = f"call {number}, {call.tool} {call.argument}, names it"
        verdict = Verdict.SATISFIED if key == "opened" else Verdict.UNSATISFIED
        verdicts.append(ExpectationVerdict(key, document, verdict, Evidence(index, number), said))
    return verdicts


def _unnamed(key: ExpectationKey, document: str, index: int, calls: int) -> ExpectationVerdict:
    said = f"none of its {calls} calls names it" if calls else "it made no call (calls: [])"
    if key == "opened":
        return ExpectationVerdict(key, document, Verdict.UNSATISFIED, None, said)
    return ExpectationVerdict(key, document, Verdict.SATISFIED, Evidence(index), said)
