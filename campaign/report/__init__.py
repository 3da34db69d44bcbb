"""The report: arms side by side per probe, from batches, the grader's shares first.

``build_report(paths)`` reads each batch's ledger once, streaming, and
returns a `Report` of frozen figures; ``print_report`` writes it for a
terminal or a pipe (``print_summary`` its summary alone), ``report_json``
makes the versioned JSON object, and ``render_page`` one self-contained HTML
page.
docs/report.md explains every figure and what it does not claim.
"""

from ._build import build_report as build_report
from ._errors import BatchesDiffer as BatchesDiffer
from ._errors import NotABatch as NotABatch
from ._errors import ReportError as ReportError
from ._errors import SameBatchTwice as SameBatchTwice
from ._json import REPORT_FORMAT as REPORT_FORMAT
from ._json import report_json as report_json
from ._model import Report as Report
from ._page import render_page as render_page
from ._terminal import print_report as print_report
from ._terminal import print_summary as print_summary
