"""A session started without the extension is refused clearly, never used silently.

Each case runs in a fresh Python process: the point is a session that exists *before*
``configure_spark`` is called, which the shared test session cannot show.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=600)


def test_configure_spark_refuses_a_running_session_without_the_extension(tmp_path):
    done = _python(f"""
        from pyspark.sql import SparkSession
        import punctuated
        plain = SparkSession.builder.master("local[1]").config(
            "spark.sql.warehouse.dir", "{tmp_path}/wh").getOrCreate()
        try:
            punctuated.configure_spark(SparkSession.builder.master("local[1]")).getOrCreate()
            print("CONFIGURED")
        except punctuated.ExtensionNotLoadedError as e:
            print("REFUSED", e)
        df = plain.readStream.format("rate").load()
        try:
            punctuated.declarations(df)
            print("DECLARATIONS")
        except punctuated.ExtensionNotLoadedError as e:
            print("REFUSED", e)
        plain.stop()
        # the driver JVM started without the jar: a new session could not load the extension
        try:
            punctuated.configure_spark(SparkSession.builder.master("local[1]")).getOrCreate()
            print("CONFIGURED")
        except punctuated.ExtensionNotLoadedError as e:
            print("REFUSED", e)
    """)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout.splitlines()
    assert out[0].startswith("REFUSED [PUNCTUATED_EXTENSION_NOT_LOADED] A Spark session is already "
                             "running without the Punctuated extension"), out
    assert "restart the Python process" in out[0]
    assert out[1].startswith("REFUSED [PUNCTUATED_EXTENSION_NOT_LOADED] This SparkSession runs "
                             "without the Punctuated extension"), out
    assert out[2].startswith("REFUSED [PUNCTUATED_EXTENSION_NOT_LOADED] This Python process already "
                             "started a Spark driver JVM without the Punctuated jar"), out
    assert "restart the Python process" in out[2]


def test_configure_spark_accepts_a_running_session_with_the_extension(spark):
    from pyspark.sql import SparkSession

    import punctuated

    same = punctuated.configure_spark(SparkSession.builder).getOrCreate()
    assert same is spark
