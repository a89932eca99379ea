"""What load shedding means for the safety report (Das, Gehrke and Riedewald 2005).

With ``spark.punctuated.shedding.maxStateRows`` set, a binary punctuated (inner) join, and a
join of three or more streams run as one multi-way join, keeps at most that many stored rows
per partition, shedding the rows of lowest priority
(``spark.punctuated.shedding.policy``: ``prob``, ``life``, ``rand``).  Its state is then
bounded even where punctuations can never purge it, at the price of partial results (a subset
of the exact result).  ``spark.punctuated.safety.mode=strict`` accepts such a query at
``start()`` and logs that results may be partial; :func:`annotate` says the same on the report
of :func:`punctuated.check_safety`.

``report.safe`` keeps its meaning (every state is *purged* by punctuations); the report gains
``shedding`` (the settings, or ``None``), ``bounded_by_budget`` (the inputs whose unpurgeable
state the budget bounds) and ``partial_results`` (whether results may then be partial).

>>> class R: unpurgeable = ["bids"]; safe = False; stateful_problems = []
>>> r = annotate(R(), {"spark.punctuated.shedding.maxStateRows": "1000"})
>>> r.bounded_by_budget, r.partial_results
(['bids'], True)
"""
from __future__ import annotations

MAX_STATE_ROWS = "spark.punctuated.shedding.maxStateRows"
POLICY = "spark.punctuated.shedding.policy"


def settings(conf) -> dict | None:
    """The shedding settings from a session conf (``spark.conf`` or a dict), ``None`` if off."""
    get = conf.get
    try:
        raw = get(MAX_STATE_ROWS, None)
    except TypeError:  # a dict-like conf without a default argument
        raw = conf[MAX_STATE_ROWS] if MAX_STATE_ROWS in conf else None
    if raw is None or str(raw).strip() == "":
        return None
    policy = get(POLICY, "prob") or "prob"
    return {"maxStateRows": int(str(raw).strip()), "policy": str(policy).strip().lower()}


def annotate(report, conf):
    """Adds ``shedding``, ``bounded_by_budget`` and ``partial_results`` to ``report`` (and
    returns it).  The budget bounds the unpurgeable join inputs when every unsafe state is a
    join's — a binary join's or a multi-way join's (no aggregation or deduplication is unsafe),
    as the start-time check decides."""
    shed = settings(conf)
    report.shedding = shed
    bounded: list[str] = []
    # a query start() refuses whatever the mode (``report.refusals``) is bounded by nothing
    if shed is not None and not report.safe and not getattr(report, "refusals", None):
        stateful = list(getattr(report, "stateful_problems", []) or [])
        if not stateful:
            bounded = sorted(report.unpurgeable)
    report.bounded_by_budget = bounded
    report.partial_results = bool(bounded)
    return report


def explain_text(report) -> str:
    """The sentence ``explain()`` adds when the budget bounds unpurgeable state ('' if not)."""
    if not getattr(report, "bounded_by_budget", None):
        return ""
    shed = report.shedding
    return (f"\nWith load shedding ({MAX_STATE_ROWS}={shed['maxStateRows']}, policy "
            f"{shed['policy']}), strict mode accepts the query: the budget bounds the state of "
            f"{', '.join(report.bounded_by_budget)}; results may be partial (a subset of the "
            "exact result).")


__all__ = ["annotate", "explain_text", "settings"]
