"""The ``punctuated`` command line.

* ``punctuated demo`` -- the main job: the auction query, our plan against Spark's own
  (state per micro-batch, plot and table under ``demo-output/``).
* ``punctuated run-sql FILE`` -- run a SQL example (statements and streaming queries);
  a failing statement is reported in one line (error class and message), exit 2.
* ``punctuated jar`` -- print the path of the bundled extension jar.
* ``punctuated check --sql QUERY`` -- is the streaming join safe? (exit 0 safe, 1 unsafe, 2 error)
* ``punctuated --version`` -- the installed package's version.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path


def forkless_local_fs() -> dict[str, str]:
    """Settings for Hadoop's local file system without forked ``chmod``/``readlink`` commands.

    The same files on disk (``punctuated.localfs`` in the jar): without Hadoop's native library,
    every state-store file a micro-batch writes and renames forks those commands; on one machine
    this spares them. The jar goes on the driver's class path too, because the launcher reads the
    local file system before ``spark.jars`` is loaded.
    """
    from punctuated._session import jar_path

    return {
        "spark.hadoop.fs.file.impl": "punctuated.localfs.ForklessLocalFileSystem",
        "spark.hadoop.fs.AbstractFileSystem.file.impl": "punctuated.localfs.ForklessLocalFs",
        "spark.driver.extraClassPath": jar_path(),
    }


def local_session(warehouse: str, app: str = "punctuated", driver_memory: str = "2g",
                  extra_conf: dict[str, str] | None = None):
    """A local SparkSession with the bundled extension, its warehouse under ``warehouse``.

    ``extra_conf``: more Spark settings, e.g. ``forkless_local_fs()``; its
    ``spark.driver.extraJavaOptions`` are added to the session's own (Derby's home under
    ``warehouse``), not put in their place.
    """
    from pyspark.sql import SparkSession

    import punctuated

    extra = dict(extra_conf or {})
    java_options = " ".join(o for o in (f"-Dderby.system.home={warehouse}",
                                        extra.pop("spark.driver.extraJavaOptions", "")) if o)
    builder = (
        SparkSession.builder.master("local[2]")
        .appName(app)
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", driver_memory)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.warehouse.dir", str(Path(warehouse) / "warehouse"))
        .config("spark.driver.extraJavaOptions", java_options)
    )
    for key, value in extra.items():
        builder = builder.config(key, value)
    spark = punctuated.configure_spark(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _print_rows(rows) -> None:
    if not rows:
        print("  (no rows)")
        return
    names = list(rows[0].asDict().keys())
    print("  " + " | ".join(names))
    for row in sorted(rows, key=lambda r: tuple(str(v) for v in r)):
        print("  " + " | ".join(str(v) for v in row))


def _print_state(progress) -> None:
    """The stateful operators of the last batch: what they hold now."""
    last = next((p for p in reversed(progress) if p["stateOperators"]), None)
    if last is None:
        return
    print("State after the last batch:")
    for op in last["stateOperators"]:
        custom = op.get("customMetrics", {})
        extra = ""
        if op["operatorName"].startswith("punctuated"):
            extra = (f", {custom.get('numPunctuationsHeld', 0)} punctuations held, "
                     f"{custom.get('numRowsPurged', 0)} rows purged in the batch")
        print(f"  {op['operatorName']}: {op['numRowsTotal']} rows{extra}")


def _describe(df) -> None:
    from punctuated._declare import declarations
    from punctuated.declaration import operator_of

    print("Declarations read by the extension:")
    for d in declarations(df):
        schemes = "; ".join(
            ", ".join(a["attr"] + operator_of(a["kind"]) for a in s)
            for s in d["schemes"]
        )
        print(
            f"  {d['table']}: schemes [{schemes}], marker {d['marker']}, "
            f"unique [{', '.join(d['unique'])}]"
        )


_ERROR_CLASS = re.compile(r"\[[A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*\]")


def error_line(e: BaseException) -> str:
    """One line for an error: where (a note such as ``statement 3``), the error class and
    the first line of its message -- never a Py4J or JVM stack trace.

    >>> error_line(ValueError("bad value\\n  at line 2"))
    'error: ValueError: bad value'
    >>> error_line(RuntimeError("[STREAM_FAILED] Query failed: Job aborted: [PUNCTUATED_X.Y] bad row"))
    'error: RuntimeError [STREAM_FAILED]: [PUNCTUATED_X.Y] bad row'
    """
    first = (str(e).strip().splitlines() or [""])[0]
    condition = None
    get_condition = getattr(e, "getCondition", None)
    if callable(get_condition):
        try:
            condition = get_condition()
        except Exception:  # noqa: BLE001 -- a message is still printed
            condition = None
    kind = type(e).__name__
    if condition and f"[{condition}]" not in first:
        first = f"[{condition}] {first}"
    # a wrapped cause with an error class of its own (a streaming query's failure): the
    # cause's class and message, after the wrapper's class
    causes = list(_ERROR_CLASS.finditer(first))
    if len(causes) > 1:
        kind = f"{kind} {causes[0].group()}"
        first = first[causes[-1].start():]
    where = "".join(f"{note}: " for note in getattr(e, "__notes__", ()))
    return f"error: {where}{kind}: {first}"


def _quiet_error_logs(spark) -> None:
    """A failing statement is reported in one line (:func:`error_line`), so neither the JVM's
    error log nor PySpark's query-context loggers (which log the whole Py4J stack trace) print it."""
    import logging

    from pyspark.logger import PySparkLogger

    spark.sparkContext.setLogLevel("FATAL")
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL + 1)


def cmd_run_sql(args) -> int:
    """Run a SQL file: 0 when every statement ran, 2 (and one line on stderr) when one failed."""
    from punctuated.sqlrun import run_file

    path = Path(args.file)
    if not path.is_file():
        print(f"error: SQL file {path} not found", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="punctuated-") as tmp:
        spark = local_session(tmp)
        _quiet_error_logs(spark)
        try:
            progress: list = []
            rows = run_file(spark, path, on_query=lambda s, df: _describe(df), progress=progress)
            print("Results:")
            _print_rows(rows)
            _print_state(progress)
        except Exception as e:  # SQL, analysis or streaming errors: one line, not a stack trace
            print(error_line(e), file=sys.stderr)
            return 2
        finally:
            spark.stop()
    return 0


def cmd_demo(args) -> int:
    """The auction demo (:mod:`punctuated.demo`): 0 when our totals passed the check."""
    from punctuated.demo import run_demo

    print(f"Punctuated demo: {args.auctions} auctions over {args.steps} steps (seed {args.seed}); "
          "our plan (append mode, declared tables) against Spark's own plan (update mode), "
          "one micro-batch each per step")
    with tempfile.TemporaryDirectory(prefix="punctuated-") as tmp:
        spark = local_session(tmp, app="punctuated-demo")
        try:
            result = run_demo(spark, out_dir=args.out, auctions=args.auctions, steps=args.steps,
                              seed=args.seed, max_bids=args.max_bids, progress=not args.no_progress)
        finally:
            spark.stop()
    check = result["check"]
    return 0 if check["ours_match"] and check["ours_once_on_close"] else 1


def cmd_jar(args) -> int:
    import punctuated

    print(punctuated.jar_path())
    return 0


def cmd_check(args) -> int:
    """Safety analysis of one streaming query: 0 safe, 1 unsafe, 2 error."""
    from punctuated.safety.spark import check_safety, format_report
    from punctuated.sqlrun import split_statements

    setup = Path(args.setup) if args.setup else None
    if setup is not None and not setup.is_file():
        print(f"error: setup file {setup} not found", file=sys.stderr)
        return 2
    if args.draw and Path(args.draw).suffix.lower() not in (".png", ".svg"):
        print(f"error: --draw {args.draw}: use a .png or .svg file name", file=sys.stderr)
        return 2
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()  # e.g. called from a notebook or a test: reuse it
    with tempfile.TemporaryDirectory(prefix="punctuated-") as tmp:
        spark = active or local_session(tmp)
        try:
            if setup is not None:
                for statement in split_statements(setup.read_text()):
                    spark.sql(statement)
            report = check_safety(spark, args.sql)
            print(format_report(report))
            if args.draw:
                report.draw(args.draw)
                print(f"Punctuation graph written to {args.draw}")
        except Exception as e:  # SQL, analysis or input errors: one line, not the whole plan
            print(error_line(e), file=sys.stderr)
            return 2
        finally:
            if active is None:
                spark.stop()
    return 0 if report.safe else 1


def package_version() -> str:
    """The installed distribution's version (package metadata), else the source's ``__version__``."""
    from importlib import metadata

    try:
        return metadata.version("punctuated")
    except metadata.PackageNotFoundError:  # run from a source tree
        import punctuated

        return punctuated.__version__


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="punctuated", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"punctuated {package_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the auction demo on local Spark: our plan against Spark's")
    demo.add_argument("--auctions", type=int, default=40, help="auctions in the stream (default 40)")
    demo.add_argument("--steps", type=int, default=12, help="steps, one micro-batch each (default 12)")
    demo.add_argument("--seed", type=int, default=7, help="seed of the generator (default 7)")
    demo.add_argument("--max-bids", type=int, default=12, help="most bids on one auction (default 12)")
    demo.add_argument("--out", default="demo-output", help="where state.png/.md/.csv go")
    demo.add_argument("--no-progress", action="store_true", help="no progress bar")
    demo.set_defaults(func=cmd_demo)
    run = sub.add_parser("run-sql", help="run a SQL file (streaming queries included)")
    run.add_argument("file")
    run.set_defaults(func=cmd_run_sql)
    sub.add_parser("jar", help="print the bundled jar's path").set_defaults(func=cmd_jar)
    check = sub.add_parser("check", help="safety analysis of a streaming join (0 safe, 1 unsafe, 2 error)")
    check.add_argument("--sql", required=True, help="the streaming query, e.g. SELECT ... FROM STREAM(a) ...")
    check.add_argument("--setup", help="SQL file run first (DDL of the declared tables)")
    check.add_argument("--draw", help="write the punctuation graph to this .png or .svg file")
    check.set_defaults(func=cmd_check)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
