"""A probe's expectations (``expect:`` in its front matter), for the grader and ``plan`` only.

The corpus load ignores ``expect:``, so a `campaign.corpus.Probe` carries no
expectation, and an import contract keeps the recorder, the seal, the batch
and the supervisor from importing this package (RC-13: the recorder never
reads expected values). docs/expectations.md says how to declare them, and
`check_expectations` checks them against the corpus (`plan` and `run` refuse).
"""

from ._checks import check_expectations as check_expectations
from ._checks import checked_expectations as checked_expectations
from ._expect import EXPECT_KEY as EXPECT_KEY
from ._expect import Expectations as Expectations
from ._expect import ExpectationsRefused as ExpectationsRefused
from ._expect import expectation_lines as expectation_lines
from ._expect import parse_expectations as parse_expectations
from ._expect import read_expectations as read_expectations
