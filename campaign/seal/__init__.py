"""The seal (RC-09): a session's workspace, the corpus without what names its probe.

The only way in from outside this package. The modules: `_names` (how a
document is named, and the matcher), `_sealplan` (rules 1-5: one decision per
corpus file, read and never written), `_seal` (the executor, rule 6's
verification, the manifest, ``--explain``), `_rules` (the path rules both
judge by), `_resolved` (a batch's sessions, resolved once), `_prefilter` (one grep for every
name's anchor), `_sealbig` and `_chunkscan` (a large file in chunks).
docs/sealing.md states every rule.
"""

from __future__ import annotations

from ._names import NameCensus as NameCensus
from ._names import Names as Names
from ._resolved import ResolvedSessions as ResolvedSessions
from ._resolved import SessionPlan as SessionPlan
from ._resolved import resolve_session as resolve_session
from ._resolved import resolve_sessions as resolve_sessions
from ._seal import SealPlan as SealPlan
from ._seal import SealResult as SealResult
from ._seal import check_folds as check_folds
from ._seal import explain as explain
from ._seal import plan_seal as plan_seal
from ._seal import seal_workspace as seal_workspace
from ._seal import verify_workspace as verify_workspace
