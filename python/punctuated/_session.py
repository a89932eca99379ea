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


class ExtensionNotLoadedError(RuntimeError):
    """A session runs without the Punctuated extension where it is needed.

    Its message starts with the error class ``[PUNCTUATED_EXTENSION_NOT_LOADED]`` and says how
    to get a session that has it.
    """


def _fix_text() -> str:
    return ("The extension's jar joins the driver's class path only when the driver JVM starts: "
            "restart the Python process (in a notebook, its kernel) and create the session with "
            "`punctuated.configure_spark(SparkSession.builder...).getOrCreate()` before any "
            "other; or start Spark with `--jars <punctuated jar> --conf spark.sql.extensions="
            f"{EXTENSION_CLASS}` (`punctuated jar` prints the jar's path).")


def _has_extension(extensions: str | None) -> bool:
    return EXTENSION_CLASS in [e.strip() for e in (extensions or "").split(",")]


def require_extension(spark) -> None:
    """Fail clearly unless ``spark`` (a ``SparkSession``) runs with the extension.

    Spark reads ``spark.sql.extensions`` once, when a session's context starts; a session
    created before :func:`configure_spark` (or without it) never gets the extension, and
    declarations on it would be silently ignored.
    """
    from punctuated import _connect

    if _connect.is_connect(spark):
        if not _has_extension(spark.conf.get("spark.sql.extensions", None)):
            raise ExtensionNotLoadedError(
                "[PUNCTUATED_EXTENSION_NOT_LOADED] The Spark Connect server this session talks to "
                f"runs without the Punctuated extension ({EXTENSION_CLASS} is not in its "
                "spark.sql.extensions), so punctuation declarations are neither read nor validated. "
                "The server gets the jar and the extension when it starts: start it with `--jars "
                f"<punctuated jar> --conf spark.sql.extensions={EXTENSION_CLASS}` (`punctuated jar` "
                "prints the jar's path; docs/connect.md).")
        return
    if not _has_extension(spark.conf.get("spark.sql.extensions", None)):
        raise ExtensionNotLoadedError(
            "[PUNCTUATED_EXTENSION_NOT_LOADED] This SparkSession runs without the Punctuated "
            f"extension ({EXTENSION_CLASS} is not in spark.sql.extensions), so punctuation "
            "declarations are neither read nor validated. " + _fix_text())


def _refuse_running_context_without_extension() -> None:
    """A builder's ``getOrCreate()`` returns the running session as it is, and a JVM that
    started without the jar never loads it: say so now, not by ignoring declarations later."""
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is not None:
        if not _has_extension(context.getConf().get("spark.sql.extensions")):
            raise ExtensionNotLoadedError(
                "[PUNCTUATED_EXTENSION_NOT_LOADED] A Spark session is already running without the "
                f"Punctuated extension: `getOrCreate()` would return it unchanged ({EXTENSION_CLASS} "
                "is not in its spark.sql.extensions). " + _fix_text())
        return
    jvm = SparkContext._jvm
    if jvm is None:
        return  # no JVM yet: the builder starts one with the jar
    try:
        jvm.java.lang.Class.forName(EXTENSION_CLASS, False, jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader())
    except Exception:
        raise ExtensionNotLoadedError(
            "[PUNCTUATED_EXTENSION_NOT_LOADED] This Python process already started a Spark driver "
            "JVM without the Punctuated jar (a session was created and stopped before): a new "
            f"session would fail to load {EXTENSION_CLASS}. " + _fix_text()) from None


def configure_spark(builder):
    """Add the bundled jar and the extension to a ``SparkSession.Builder``; return it.

    Works offline (the jar is local; nothing is resolved from a registry), and
    keeps jars and extensions the builder already has::

        from pyspark.sql import SparkSession
        import punctuated
        spark = punctuated.configure_spark(SparkSession.builder.master("local[2]")).getOrCreate()

    With ``builder.remote("local[2]")`` pyspark starts a local Spark Connect server with these
    settings, so the Connect session has the extension; a builder for a running server
    (``remote("sc://...")``) raises ``ValueError``: that server must be started with the jar
    and the extension (docs/connect.md).

    Spark adds extensions only when a session's context starts, and the jar only when the
    driver JVM starts: if a session without the extension is running (``getOrCreate()``
    would return it unchanged), or this process's driver JVM started without the jar, this
    raises :class:`ExtensionNotLoadedError` saying how to get a session that has it.
    If pyspark's Spark minor is not the one the bundled jar was built for, it raises
    :class:`punctuated.spark_version.SparkVersionMismatchError` (docs/spark-versions.md).
    """
    options = getattr(builder, "_options", {})
    remote = str(options.get("spark.remote", "") or "")
    if remote.startswith("sc://"):
        # a Connect client sets no jar or extension on a server that is already running
        raise ValueError(
            f"configure_spark cannot add the Punctuated jar to the Spark Connect server at {remote}: "
            "a server reads spark.jars and spark.sql.extensions when it starts. Start the server "
            f"with `--jars <punctuated jar> --conf spark.sql.extensions={EXTENSION_CLASS}` "
            "(`punctuated jar` prints the jar's path) and connect with "
            "SparkSession.builder.remote(url).getOrCreate() (docs/connect.md). "
            "builder.remote('local[...]'), which starts its own server, works with configure_spark.")
    _refuse_running_context_without_extension()
    jar = jar_path()
    # the jar is built for one Spark minor: fail now, naming the wheel to install, on another
    from punctuated.spark_version import check_spark_version

    check_spark_version()
    builder = builder.config("spark.jars", _append(options.get("spark.jars"), jar))
    return builder.config(
        "spark.sql.extensions", _append(options.get("spark.sql.extensions"), EXTENSION_CLASS)
    )
