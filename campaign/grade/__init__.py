"""The grader: verdicts of each recorded event against the probes' expectations.

A pure function of the transcripts, the expectations (``expect:`` in each
probe's front matter) and its own version, `GRADER_VERSION`. It sits beside
the recorder and apart from it: the recorder, the seal and the supervisor
never import this package (an import contract holds it), and nothing here
writes to a batch. docs/grading.md says every verdict rule in words.
"""

from ._compare import Difference as Difference
from ._compare import Figures as Figures
from ._compare import Pooled as Pooled
from ._compare import ProbeFigures as ProbeFigures
from ._compare import Share as Share
from ._compare import figures as figures
from ._errors import BatchesDiffer as BatchesDiffer
from ._errors import GradeError as GradeError
from ._errors import NoCorpus as NoCorpus
from ._errors import NotABatch as NotABatch
from ._errors import SameBatchTwice as SameBatchTwice
from ._errors import TranscriptDiffers as TranscriptDiffers
from ._errors import TranscriptMissing as TranscriptMissing
from ._grade import NOT_FINAL as NOT_FINAL
from ._grade import grade_batches as grade_batches
from ._grade import read_set_now as read_set_now
from ._json import GRADE_FORMAT as GRADE_FORMAT
from ._json import grade_json as grade_json
from ._model import GRADER_VERSION as GRADER_VERSION
from ._model import MOVED_READ_SET as MOVED_READ_SET
from ._model import Apart as Apart
from ._model import CellGrade as CellGrade
from ._model import Evidence as Evidence
from ._model import ExpectationKey as ExpectationKey
from ._model import ExpectationVerdict as ExpectationVerdict
from ._model import Grading as Grading
from ._model import SessionGrade as SessionGrade
from ._model import Verdict as Verdict
from ._opened import named_documents as named_documents
from ._session import event_verdicts as event_verdicts
from ._session import session_verdict as session_verdict
from ._shell import read_words as read_words
from ._text import MOVED_SENTENCE as MOVED_SENTENCE
from ._text import grade_text as grade_text
