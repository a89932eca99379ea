"""Semantic load shedding for joins under a memory budget: the offline tools.

Das, Gehrke and Riedewald, "Semantic Approximation of Data Stream Joins" (2005):

* :mod:`~punctuated.shedding.trace` -- traces of two streams (JSON lines);
* :mod:`~punctuated.shedding.workloads` -- the paper's Zipf workloads and Figure 3;
* :mod:`~punctuated.shedding.online` -- EXACT and the online policies PROB, LIFE, RAND
  (§4.2) with the frequency estimator shared with the JVM join;
* :mod:`~punctuated.shedding.flow` -- OPT-offline as min-cost flow (§4.1);
* :mod:`~punctuated.shedding.static` -- the static join: OPTDP, NDG, ADG (§3).

See ``docs/shedding.md``.
"""

from punctuated.shedding.trace import Arrival, Trace
from punctuated.shedding.online import FrequencyEstimator, ReplayResult, exact_output, replay

__all__ = ["Arrival", "Trace", "FrequencyEstimator", "ReplayResult", "exact_output", "replay"]
