"""The expectations checked against the corpus they are declared in (docs/expectations.md).

`parse_expectations` checks the form of ``expect:`` alone; this module checks
what only the corpus can tell, before anything is spent (`plan` and `run`
refuse, by `campaign.plan.compose_plan`):

* ``answered`` is one of the probe's ``answers`` in its declared form, the form
  RC-13 writes into a transcript; a value with the same words as a declared
  answer is refused with that answer named, as what it was probably meant to be.
* ``opened`` and ``not_opened`` name files of the corpus's tree (any regular
  file the tree digest covers, typed or not: an untyped README or CLAUDE.md can
  be expected) that a session of the probe can see: never under the shelf
  ``docs/probes/`` (the probe file itself) or ``.headwater/``, never one of the
  probe's answer keys (the seal removes those from every workspace of the probe);
  and no path is in both.
* ``cites`` are ids of the corpus's documents (`campaign.corpus.Corpus.ids`), never a
  probe's id: no workspace holds a probe's document (the shelf ``docs/probes/`` never
  enters one), so no session can have read what it would cite. (A probe's id may still
  appear in a workspace's text, in a fold of the probe or a file naming another probe.)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from campaign.corpus import HEADWATER, SHELF, read_front
from recorder import answer_words

from ._expect import Expectations, ExpectationsRefused, parse_expectations

if TYPE_CHECKING:
    from campaign.corpus import Corpus, Probe


def _refuse(corpus: Corpus, probe: Probe, problem: str) -> ExpectationsRefused:
    return ExpectationsRefused(str(corpus.root), probe.path, problem)


def _check_answered(corpus: Corpus, probe: Probe, answered: str) -> None:
    if answered in probe.answers:
        return
    if not probe.answers:
        raise _refuse(corpus, probe, f"expect: answered {answered!r}: the probe declares no "
                                     "`answers`, so no session's answer can be one: the "
                                     "transcript records only a declared answer "
                                     "(docs/glossary.md: RC-13)")
    meant = [a for a in probe.answers if answer_words(a) == answer_words(answered)]
    hint = (f"; it has the words of the declared answer {meant[0]!r}, write that form"
            if meant else "")
    raise _refuse(corpus, probe, f"expect: answered {answered!r} is not one of the probe's "
                                 f"answers ({', '.join(repr(a) for a in probe.answers)}): "
                                 "the transcript records a declared answer in its declared "
                                 f"form, so `answered` must be written exactly so{hint}")


def _unseen(corpus: Corpus, probe: Probe, path: str) -> str | None:
    """Why no session of ``probe`` can see the corpus file ``path``; None: it can."""
    if path.startswith(SHELF):
        return "the probe shelf docs/probes/ never enters a workspace"
    if path.startswith(HEADWATER):
        return ".headwater/ never enters a workspace"
    if path in corpus.answer_keys_of(probe.id):
        return "it is an answer key of the probe (probe.yml), which the seal removes"
    return None


def _check_paths(corpus: Corpus, probe: Probe, key: str, paths: Iterable[str]) -> None:
    for path in paths:
        if path not in corpus.files:
            raise _refuse(corpus, probe, f"expect: {key}: {path!r} is not a file of the corpus "
                                         "(a corpus-relative path of a regular file, e.g. "
                                         "docs/guide.md)")
        why = _unseen(corpus, probe, path)
        if why is not None:
            raise _refuse(corpus, probe, f"expect: {key}: {path!r} is never in a session's "
                                         f"workspace ({why}), so no session can open it")


def check_expectations(corpus: Corpus, probe: Probe, expectations: Expectations) -> None:
    """Check ``expectations``, declared by ``probe``, against ``corpus`` (the module doc's rules).

    Raises:
        ExpectationsRefused: a rule is broken; the message names the probe file, the key
            and the rule.
    """
    if expectations.answered is not None:
        _check_answered(corpus, probe, expectations.answered)
    _check_paths(corpus, probe, "opened", expectations.opened or ())
    _check_paths(corpus, probe, "not_opened", expectations.not_opened or ())
    both = sorted(set(expectations.opened or ()) & set(expectations.not_opened or ()))
    if both:
        raise _refuse(corpus, probe, f"expect: {both[0]!r} is in both opened and not_opened: "
                                     "a session cannot both open it and leave it unopened")
    for cited in expectations.cites or ():
        if cited in corpus.probes:
            raise _refuse(corpus, probe, f"expect: cites: {cited!r} is a probe's id, which no "
                                         "session's workspace holds as a document (the shelf "
                                         "docs/probes/ never enters a workspace), so citing it "
                                         "cannot show a document the session read: cite a "
                                         "document of the corpus")
        if cited not in corpus.ids:
            raise _refuse(corpus, probe, f"expect: cites: {cited!r} is not the id of a document "
                                         "of the corpus (an `id:` in some document's front "
                                         "matter)")


def checked_expectations(corpus: Corpus, probe_ids: Iterable[str]) -> dict[str, Expectations]:
    """The expectations of the probes ``probe_ids`` of ``corpus``, each read again from its
    probe file and checked (`check_expectations`); probes without ``expect:`` are absent.

    Raises:
        ExpectationsRefused: an ``expect:`` breaks a rule of form or of the corpus.
        CorpusError: a probe file can no longer be read as it was loaded.
        KeyError: an id is not a probe of ``corpus``.
    """
    found: dict[str, Expectations] = {}
    for probe_id in probe_ids:
        probe = corpus.probes[probe_id]
        expectations = parse_expectations(str(corpus.root), probe.path,
                                          read_front(corpus, probe.path))
        if expectations is not None:
            check_expectations(corpus, probe, expectations)
            found[probe_id] = expectations
    return found
