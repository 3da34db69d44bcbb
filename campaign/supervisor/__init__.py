"""The supervisor: resolved session specs (in the plan's order), one attempt, the fan-out."""

from __future__ import annotations

from ._budget import Budgets as Budgets
from ._evidence import EvidenceCheck as EvidenceCheck
from ._evidence import check_evidence as check_evidence
from ._fanout import RunLimits as RunLimits
from ._fanout import Supervisor as Supervisor
from ._gate import LOGIN_HOW as LOGIN_HOW
from ._gate import Prices as Prices
from ._outcome import AttemptOutcome as AttemptOutcome
from ._progress import BatchOutcome as BatchOutcome
from ._progress import InFlight as InFlight
from ._progress import LiveStatistics as LiveStatistics
from ._progress import View as View
from ._retranscribe import retranscribe as retranscribe
from ._session import AttemptRunner as AttemptRunner
from ._session import BatchContext as BatchContext
from ._session import GatewayOpener as GatewayOpener
from ._session import run_attempt as run_attempt
from ._spec import SessionSpec as SessionSpec
from ._spec import planned_sessions as planned_sessions
from ._spec import session_order as session_order
from ._spend import BatchSpend as BatchSpend
from ._streams import FINAL_TEXT_NAME as FINAL_TEXT_NAME
from ._writes import refused_write as refused_write
from ._writes import write_remedy as write_remedy
