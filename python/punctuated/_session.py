"""The bundled extension jar and the session helper (user contract: "Packaging and session")."""

from __future__ import annotations

from pathlib import Path

EXTENSION_CLASS = "punctuated.spark.PunctuatedExtensions"
_JAR_NAME = "punctuated-assembly.jar"


def jar_path() -> str:
    """Path of the extension jar shipped inside this package.

    >>> jar_path().endswith("punctuated-assembly.jar")  # doctest: +SKIP
    True
    """
    jar = Path(__file__).resolve().parent / "jars" / _JAR_NAME
    if not jar.is_file():
        raise FileNotFoundError(
            f"The Punctuated extension jar is missing at {jar}. This package was installed "
            "without its jar: build it with `scripts/sbt assembly` and reinstall "
            "(`scripts/setup.sh` does both)."
        )
    return str(jar)


def _append(existing: str | None, value: str, sep: str = ",") -> str:
    items = [item.strip() for item in (existing or "").split(sep) if item.strip()]
    if value not in items:
        items.append(value)
    return sep.join(items)


def configure_spark(builder):
    """Add the bundled jar and the extension to a ``SparkSession.Builder``; return it.

    Works offline (the jar is local; nothing is resolved from a registry), and
    keeps jars and extensions the builder already has::

        from pyspark.sql import SparkSession
        import punctuated
        spark = punctuated.configure_spark(SparkSession.builder.master("local[2]")).getOrCreate()
    """
    options = getattr(builder, "_options", {})
    jar = jar_path()
    builder = builder.config("spark.jars", _append(options.get("spark.jars"), jar))
    return builder.config(
        "spark.sql.extensions", _append(options.get("spark.sql.extensions"), EXTENSION_CLASS)
    )
