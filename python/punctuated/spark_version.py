"""Which Spark the bundled jar was built for, and the check that pyspark matches it.

Punctuated's jar uses Spark internals (state stores, physical join operators) that move
between Spark minors, so a jar built for Spark 4.1 does not run on 4.2 and the other way
round. Each wheel holds the jar for one Spark minor (docs/spark-versions.md: the version
scheme is ``<punctuated version>.<spark major>.<spark minor>``, e.g. ``0.1.0.4.1``) and
records the Spark version in the jar (``punctuated/build.properties``, written by
``build.sbt``). :func:`configure_spark` calls :func:`check_spark_version` so that a mismatch
fails at once, naming both versions and the fix, instead of as a ``NoSuchMethodError`` in
the middle of a query::

    >>> import punctuated.spark_version as sv
    >>> sv.spark_minor("4.1.3")
    '4.1'
    >>> sv.check_spark_version(pyspark_version="4.2.0", jar_version="4.2.0")
    '4.2'
"""

from __future__ import annotations

import zipfile

_PROPERTIES = "punctuated/build.properties"


class SparkVersionMismatchError(RuntimeError):
    """The running pyspark's minor differs from the one the bundled jar was built for.

    Its message starts with ``[PUNCTUATED_SPARK_VERSION_MISMATCH]`` and names both versions
    and the wheel to install.
    """


def spark_minor(version: str) -> str:
    """``"4.1.3"`` -> ``"4.1"`` (also for ``"4.1.0.dev0"``-like versions)."""
    parts = version.strip().split(".")
    if len(parts) < 2 or not parts[0].isdigit() or not parts[1].isdigit():
        raise ValueError(f"not a Spark version: {version!r} (expected MAJOR.MINOR[.PATCH])")
    return f"{parts[0]}.{parts[1]}"


def minor_at_least(version: str, minor: str) -> bool:
    """Is ``version``'s Spark minor ``minor`` or a later one? (Behaviour that differs between
    minors, docs/spark-versions.md.)

    >>> minor_at_least("4.1.4", "4.2"), minor_at_least("4.2.0", "4.2"), minor_at_least("4.10.0", "4.2")
    (False, True, True)
    """
    have, want = (tuple(int(n) for n in spark_minor(v).split(".")) for v in (version, minor + ".0"))
    return have >= want


def jar_build_properties(jar: str | None = None) -> dict[str, str]:
    """The ``punctuated/build.properties`` entries of ``jar`` (default: the bundled jar).

    ``spark.version`` is the Spark the jar was compiled against, ``spark.minor`` its minor.
    """
    if jar is None:
        from punctuated._session import jar_path

        jar = jar_path()
    try:
        with zipfile.ZipFile(jar) as zf:
            text = zf.read(_PROPERTIES).decode("utf-8")
    except KeyError:
        raise SparkVersionMismatchError(
            f"[PUNCTUATED_SPARK_VERSION_MISMATCH] The Punctuated jar {jar} does not say which Spark "
            f"it was built for (no {_PROPERTIES}): it predates the version stamp. Rebuild it with "
            "`scripts/setup.sh` (or `scripts/sbt assembly`) and reinstall the package.") from None
    props = {}
    for line in text.splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            key, value = line.split("=", 1)
            props[key.strip()] = value.strip()
    return props


def jar_spark_version(jar: str | None = None) -> str:
    """The full Spark version the bundled (or given) jar was compiled against, e.g. ``"4.2.0"``."""
    return jar_build_properties(jar)["spark.version"]


def check_spark_version(pyspark_version: str | None = None, jar_version: str | None = None) -> str:
    """Fail unless pyspark's minor equals the bundled jar's; return that minor.

    ``pyspark_version`` defaults to the importable ``pyspark.__version__`` (the JVM a local
    session starts is pyspark's own); ``jar_version`` to :func:`jar_spark_version`. Patch
    versions may differ (``4.1.1`` runs a jar built against ``4.1.3``); minors may not.
    """
    if pyspark_version is None:
        import pyspark

        pyspark_version = pyspark.__version__
    if jar_version is None:
        jar_version = jar_spark_version()
    running, built = spark_minor(pyspark_version), spark_minor(jar_version)
    if running != built:
        raise SparkVersionMismatchError(
            f"[PUNCTUATED_SPARK_VERSION_MISMATCH] pyspark {pyspark_version} (Spark {running}) is "
            f"running, but this punctuated package holds the jar built for Spark {jar_version} "
            f"(Spark {built}); Spark's internals differ between minors. Install the punctuated "
            f"wheel for Spark {running} (version scheme <punctuated version>.{running}, e.g. "
            f"`pip install \"punctuated==0.1.0.{running}\"`), or pyspark {built}.x "
            f"(`pip install \"pyspark=={built}.*\"`); docs/spark-versions.md.")
    return built
