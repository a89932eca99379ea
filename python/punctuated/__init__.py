"""Punctuated: punctuation semantics for Spark Structured Streaming.

Stream-stream joins, aggregations and deduplication that forget exactly the
state that can no longer matter, because the streams say so (punctuations).

Entry points (see the project README):

* :func:`configure_spark` / :func:`jar_path` -- load the bundled extension;
* :func:`register_schemes` / :func:`with_schemes` -- declare punctuation
  schemes on catalog tables or on streaming DataFrames;
* :func:`analyze_safety` -- will every join state be purged? (Li et al. 2006).
"""

from punctuated._session import configure_spark, jar_path
from punctuated._declare import declarations, register_schemes, with_schemes

__all__ = [
    "configure_spark",
    "jar_path",
    "register_schemes",
    "with_schemes",
    "declarations",
    "analyze_safety",
]

__version__ = "0.1.0"


def analyze_safety(streams, predicates, schemes):
    """Safety of a multi-way join from its declarations alone (no Spark).

    See :func:`punctuated.safety.analyze_safety`.
    """
    from punctuated.safety import analyze_safety as _analyze

    return _analyze(streams, predicates, schemes)
