"""Punctuated: punctuation semantics for Spark Structured Streaming.

Stream-stream joins, aggregations and deduplication that forget exactly the
state that can no longer matter, because the streams say so (punctuations).

Entry points (see the project README):

* :func:`configure_spark` / :func:`jar_path` -- load the bundled extension;
* :func:`register_schemes` / :func:`with_schemes` -- declare punctuation
  schemes on catalog tables or on streaming DataFrames;
* :func:`analyze_safety` -- will every join state be purged? (Li et al. 2006).
"""

from punctuated._session import ExtensionNotLoadedError, configure_spark, jar_path
from punctuated._declare import NotAStreamError, declarations, register_schemes, with_schemes
from punctuated.migration import join_plan, migrate

__all__ = [
    "configure_spark",
    "ExtensionNotLoadedError",
    "jar_path",
    "register_schemes",
    "with_schemes",
    "NotAStreamError",
    "declarations",
    "analyze_safety",
    "analyze_plan",
    "safe_plans",
    "check_safety",
    "migrate",
    "join_plan",
]

__version__ = "0.1.0"


def analyze_safety(streams, predicates, schemes):
    """Safety of a multi-way join from its declarations alone (no Spark).

    See :func:`punctuated.safety.analyze_safety`.
    """
    from punctuated.safety import analyze_safety as _analyze

    return _analyze(streams, predicates, schemes)


def analyze_plan(streams, predicates, schemes, plan):
    """Per-operator purgeability of one plan. See :func:`punctuated.safety.analyze_plan`."""
    from punctuated.safety import analyze_plan as _analyze_plan

    return _analyze_plan(streams, predicates, schemes, plan)


def safe_plans(streams, predicates, schemes=None, **options):
    """The best few safe plans (Li et al. 2006, §5.2). See :func:`punctuated.safety.safe_plans`."""
    from punctuated.safety import safe_plans as _safe_plans

    return _safe_plans(streams, predicates, schemes, **options)


def check_safety(spark, query):
    """Safety of a streaming query's joins. See :func:`punctuated.safety.spark.check_safety`."""
    from punctuated.safety.spark import check_safety as _check

    return _check(spark, query)
