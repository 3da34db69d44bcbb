"""The statistics the report, the grader and the plan share: pure functions of counts.

* `wilson` - the Wilson score interval of a proportion.
* `newcombe` - Newcombe's hybrid score interval of a difference of two proportions.
* `fisher_exact` - the two-sided p-value of Fisher's exact test on a 2x2 table.
* `quartiles` - the quartiles of a histogram of counts.
* `mantel_haenszel` - the Mantel-Haenszel common odds ratio over strata, with the
  Robins-Breslow-Greenland interval.
* `probe_outcome`, `tally_probes` - a probe's win, loss or tie against the reference
  arm, and their counts across probes.

None of them reads a batch, a corpus or a clock; docs/statistics.md says each
in words, with the sources of the formulas and how each zero cell is handled.
"""

from ._power import POWER as POWER
from ._power import Detectable as Detectable
from ._power import detectable_difference as detectable_difference
from ._power import fisher_power as fisher_power
from ._power import normal_power as normal_power
from ._power import repetitions_needed as repetitions_needed
from ._power import sessions_needed as sessions_needed
from ._scores import CONFIDENCE as CONFIDENCE
from ._scores import SIGNIFICANCE as SIGNIFICANCE
from ._scores import Interval as Interval
from ._scores import Quartiles as Quartiles
from ._scores import Z as Z
from ._scores import fisher_exact as fisher_exact
from ._scores import newcombe as newcombe
from ._scores import quartiles as quartiles
from ._scores import wilson as wilson
from ._strata import CommonOddsRatio as CommonOddsRatio
from ._strata import mantel_haenszel as mantel_haenszel
from ._tally import Outcome as Outcome
from ._tally import WinsLossesTies as WinsLossesTies
from ._tally import probe_outcome as probe_outcome
from ._tally import tally_probes as tally_probes
