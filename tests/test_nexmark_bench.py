"""The NEXMark benchmark runner on a tiny event count: its files, and our engine's results.

Runs ``benchmarks/nexmark.py`` as a subprocess (its own SparkSession), for q3, q20 and q4's
inner query with Spark's own plan and ours (and q3's "floor" reference, in q3's run), for the
event-time queries q5, q7 and q8 with Spark's watermark plan and ours; the full q4 is refused
by both. Asserts on results and state sizes, never on timings. (Each run starts a JVM per
engine and one for the batch answer, about 25 s each before any event: runs are shared where
their options agree, each query gets the fewest events its assertions hold at, in 3
micro-batches, and the children's JVMs run with ``CHILD_JVM_OPTIONS``, tests/conftest.py.)
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIELDS = {"engine", "query", "events", "events_per_second", "max_state_rows", "final_state_rows",
          "results_match"}


#: Events per second of event time for the windowed and band queries (q5, q7, q8; the runner's
#: default is 10,000): their 30,000 events then span 15 s of event time, as 150,000 would at the
#: default, so their 10-second windows and bands close within the run.
SLOW_CLOCK = 2_000


def run_runner(env, tmp_path, query: str, events: int, engines: str, *extra: str) -> None:
    """Runs the benchmark runner on a tiny event count in 3 micro-batches, into tmp_path
    (``env``: the children's environment, the ``child_env`` fixture)."""
    cmd = [sys.executable, "-m", "benchmarks.nexmark", "--query", query, "--events", str(events),
           "--events-per-batch", str(events // 3), "--engines", engines, "--out", str(tmp_path),
           "--driver-memory", "1g", "--reps", "1", *extra]  # one repetition: the files' shape, not timings
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]


# q3's Spark plan grows by the people (1 event in 50) and auctions of category 10 it keeps,
# about 2,200 rows per 100 K events, ours stays near the 490 live ones: 4 times at 120 K events
# needs margin; q20's Spark plan keeps nearly every event, ours a few dozen rows.
@pytest.mark.parametrize("query,events", [("q3", 120_000), ("q20", 30_000)])
def test_runner_files_and_our_results(tmp_path, child_env, query, events):
    # q20's engines on the local file system without forked commands: the same results
    # q3 also runs the "floor" reference (its assertions: floor_reference, below)
    engines = "floor,native,punctuated" if query == "q3" else "native,punctuated"
    run_runner(child_env, tmp_path, query, events, engines, *(["--forkless-fs"] if query == "q20" else []))

    name = f"nexmark_{query}_{events}"
    summaries = json.loads((tmp_path / f"{name}.json").read_text())
    by = {s["engine"]: s for s in summaries}
    assert set(by) == set(engines.split(","))
    if query == "q3":
        floor_reference(tmp_path, name, by)
    summaries = [by["native"], by["punctuated"]]
    for s in summaries:
        assert FIELDS <= set(s), s
        assert s["query"] == query and s["events"] == events
        assert s["events_per_second"] > 0

    ours, spark = by["punctuated"], by["native"]
    assert spark["results_match"] is True      # Spark's own plan is exact, just unbounded
    assert ours["results_match"] is True
    assert ours["result_rows"] == spark["result_rows"] > 0
    # our state stays at the live working set; Spark's own grows with the events
    assert ours["max_state_over_live_working_set"] <= 1.2
    assert ours["final_state_rows"] * 4 < spark["final_state_rows"]

    with open(tmp_path / f"{name}.csv") as f:
        rows = list(csv.DictReader(f))
    assert {r["engine"] for r in rows} == set(by)
    assert {"batch", "events", "input_rows", "state_rows", "batch_ms", "planning_ms",
            "state_commit_ms"} <= set(rows[0])
    # both engines keep state, so both commit stores in every batch
    assert ours["mean_state_commit_ms"] > 0 and spark["mean_state_commit_ms"] > 0
    md = (tmp_path / f"{name}.md").read_text()
    assert "throughput punctuated / native" in md and "Command:" in md
    assert ("--forkless-fs" in md) == (query == "q20")
    assert "Where a micro-batch's time goes" in md
    # the first micro-batch apart from the later ones (summed)
    for s in summaries:
        split = s["first_and_rest"]
        assert split["first_ms"] >= split["first_planning_ms"] > 0 and split["rest_ms"] >= split["rest_planning_ms"] > 0, s
    assert "| engine | first micro-batch | its planning | later micro-batches | their planning |" in md
    # the JVM's JIT and Catalyst's rules over the timed run, per engine
    for s in summaries:
        assert s["driver"]["jit_s"] > 0 and s["driver"]["rules_ms_per_batch"] > 0, s
    assert "| JIT compilation s | Catalyst rules ms per batch |" in md
    assert (tmp_path / f"{name}.png").stat().st_size > 0


@pytest.mark.parametrize("query", ["q4_inner"])
def test_aggregation_after_the_join(tmp_path, child_env, query):
    """q4's inner query: our plan in append mode gives exactly the final rows of the auctions
    closed by the end (the batch answer over them), and purges their state. (q9 has the same
    shape, a maximum per auction over the join: ``python -m benchmarks.nexmark --query q9``.)"""
    events = 30_000  # Spark's plan keeps about a row per event, ours about 200 rows
    run_runner(child_env, tmp_path, query, events, "native,punctuated")

    summaries = json.loads((tmp_path / f"nexmark_{query}_{events}.json").read_text())
    by = {s["engine"]: s for s in summaries}
    ours, spark = by["punctuated"], by["native"]
    assert "error" not in ours, ours
    assert ours["results_match"] is True
    assert ours["result_rows"] == ours["expected_rows"] > 0
    # the auctions still open at the end have no final row yet
    assert 0 < ours["expected_rows_all_auctions"] - ours["expected_rows"] < 500
    # state: about the open auctions (a join row and a group each), never the events
    assert ours["max_state_over_live_working_set"] <= 2.5
    import pyspark

    from punctuated.spark_version import minor_at_least

    if minor_at_least(pyspark.__version__, "4.2"):
        assert ours["final_state_rows"] * 50 < spark["final_state_rows"]
    else:  # Spark 4.0 and 4.1 refuse a stream-stream join in update mode: nothing to compare with
        assert "not supported in Update output mode" in spark["error"], spark


@pytest.mark.spark
def test_q4_outer_average_is_refused(spark, tmp_path):
    """Full q4: no punctuation closes a category, so the outer AVG would hold its groups
    forever: strict safety refuses our plan at start, before Spark's append-mode check (Spark's
    own plan is refused too, in update mode). The runner records both as not run, with no numbers.

    Both refusals come at ``start()``, before any event: rather than a runner of its own (three
    JVMs to refuse two queries), the runner's child code (``run_engine``) runs in this session,
    and the runner's ``engine_summary`` records what the child would have reported."""
    from benchmarks import nexmark

    assert "q4_inner" in nexmark.PER_CLOSED_AUCTION and "q4" not in nexmark.PER_CLOSED_AUCTION
    sql = nexmark.query_sql("q4", "watermark", 10_000, 1_000_000)
    assert "{" not in sql and "MILLISECONDS" in sql
    # the runner's options: python -m benchmarks.nexmark --query q4 --events 1000
    args = nexmark.parser().parse_args(["--query", "q4", "--events", "1000"])
    reference = {"expected": [0, 0], "expected_all": [0, 0], "live": {}}
    assert spark.conf.get("spark.punctuated.safety.mode", "strict") == "strict"
    by = {}
    for engine in ("native", "punctuated"):
        per_batch, totals, seconds, error, _ = nexmark.run_engine(spark, engine, args, tmp_path)
        assert per_batch == [] and totals is None and error, (engine, error)
        run = {"per_batch": per_batch, "totals": totals, "seconds": seconds, "error": error,
               "events_per_second": None, "rep": 0}
        by[engine], rows = nexmark.engine_summary(engine, [run], args, "test", reference, cores=2)
        assert rows == []
    for view in ("auction", "bid"):
        spark.catalog.dropTempView(view)
    assert by["native"]["error"] and by["native"]["results_match"] is None
    assert "PUNCTUATED_UNSAFE_QUERY" in by["punctuated"]["error"]
    assert by["punctuated"]["results_match"] is None and by["punctuated"]["final_state_rows"] is None


def floor_reference(tmp_path, name, by):
    """The optional "floor" engine runs q3's inputs and filters without the join: every row
    that reaches the join passes through it, it holds no state, its results are compared with
    nothing, and the Markdown gives floor / native; a query without a floor query is recorded
    as not run."""
    floor, spark = by["floor"], by["native"]
    assert floor["results_match"] is None and floor["max_state_rows"] == 0
    assert spark["results_match"] is True
    # the join's inputs, filtered: at least one row per result (each result has an auction)
    assert floor["result_rows"] > spark["result_rows"] > 0
    assert "throughput floor / native" in (tmp_path / f"{name}.md").read_text()

    from benchmarks import nexmark

    with pytest.raises(ValueError, match="no query for q9"):
        nexmark.query_sql("q9", "floor", 10_000, 1_000)


@pytest.mark.parametrize("query", ["q5", "q8"])
def test_event_time_queries_against_the_watermark(tmp_path, child_env, query):
    """q5 (two chained windowed aggregations) and q8 (a time-band join): our plan over streams
    with ``dateTime<=`` punctuations gives the batch answer (q5: of the windows it can have
    closed by the end), as Spark's over the same streams with watermarks does for q5 (for q8
    Spark's join drops person 1000, whose event time is the epoch, as late under its initial
    watermark 0: not asserted), and ours holds at most the state the watermark plan holds."""
    events = 30_000  # 15 s of event time (SLOW_CLOCK): q5's windows of 10 s, q8's bands
    metrics = ("--task-metrics",) if query == "q8" else ()
    run_runner(child_env, tmp_path, query, events, "watermark,punctuated", "--events-per-second", str(SLOW_CLOCK),
               *metrics)
    by = {s["engine"]: s for s in json.loads((tmp_path / f"nexmark_{query}_{events}.json").read_text())}
    ours, spark = by["punctuated"], by["watermark"]
    assert ours.get("error") is None and spark.get("error") is None, (ours.get("error"), spark.get("error"))
    assert ours["results_match"] is True
    assert spark["results_match"] is True or query == "q8"
    assert ours["result_rows"] >= spark["result_rows"] > 0
    assert ours["max_state_rows"] <= spark["max_state_rows"]
    if metrics:
        # a join's stage (its stores opened by the RDD zipping its inputs) counts as stateful:
        # one task per partition (2) in each micro-batch of each engine's join
        for s in (ours, spark):
            assert s["task_metrics"]["stateful"]["tasks"] >= 2 * 3, (s["engine"], s["task_metrics"])


def test_benchmark_helpers_doctests():
    """The examples in the benchmark modules' docstrings hold."""
    import doctest

    from benchmarks import nexmark, nexmark_report, task_metrics

    for module in (nexmark, nexmark_report, task_metrics):
        assert doctest.testmod(module).failed == 0, module.__name__


Q7_EVENTS, Q7_WARMUP = 30_000, 10_000  # 3 micro-batches of 10 K events, 15 s of event time (SLOW_CLOCK)
#: ``--spark-conf`` in the q7 run: Spark's sort-based shuffle writers even at 2 partitions
#: (not the one that writes a file per partition), so the replicating exchange runs under them
NO_BYPASS = 0


@pytest.fixture(scope="module")
def q7_run(tmp_path_factory, child_env):
    """One q7 run shared by the two tests below (each engine a JVM of its own): every q7
    engine, the bid stream with its time punctuations only, warm-up and task metrics."""
    out = tmp_path_factory.mktemp("q7")
    # punctuated_alt: the punctuated engine from a copy of the installed package (another jar in use)
    import punctuated
    alt = tmp_path_factory.mktemp("alt-package")
    shutil.copytree(Path(punctuated.__file__).resolve().parent, alt / "punctuated")
    run_runner(child_env, out, "q7", Q7_EVENTS, "watermark,watermark_same_input,watermark_again,punctuated,punctuated_alt",
               "--time-punctuations-only", "--forkless-fs", "--warmup-events", str(Q7_WARMUP), "--task-metrics",
               "--events-per-second", str(SLOW_CLOCK), "--alt-path", str(alt),
               "--spark-conf", f"spark.shuffle.sort.bypassMergeThreshold={NO_BYPASS}")
    (out / "alt").write_text(str(alt))
    return out


def test_watermark_plan_over_the_punctuated_input(q7_run):
    """The optional "watermark_same_input" engine runs Spark's watermark plan over the rows our
    engine reads (punctuations generated, the streams undeclared, punctuation rows filtered out
    where they are read): Spark's own operators (no held punctuations, the watermark plan's
    state), the watermark plan's exact results, more rows read than the watermark engine's
    stream without punctuations; the Markdown splits punctuated / watermark into the input's
    cost and the operators'. With ``--warmup-events`` each child first runs its query over the
    first events, untimed, and the timed run still gives exactly the batch answer (its own
    checkpoint, from the first event). ``--task-metrics`` sums the timed query's tasks per stage
    kind from Spark's event log: the warm-up query's tasks are not among them."""
    tmp_path, events = q7_run, Q7_EVENTS
    name = f"nexmark_q7_{events}"
    by = {s["engine"]: s for s in json.loads((tmp_path / f"{name}.json").read_text())}
    same, spark, ours = by["watermark_same_input"], by["watermark"], by["punctuated"]
    assert same.get("error") is None, same.get("error")
    assert same["results_match"] is True and spark["results_match"] is True and ours["results_match"] is True
    assert (same["result_rows"], same["max_state_rows"]) == (spark["result_rows"], spark["max_state_rows"])
    assert same["max_punctuations_held"] == 0 < ours["max_punctuations_held"]
    with open(tmp_path / f"{name}.csv") as f:
        rows = list(csv.DictReader(f))
    read = {e: sum(int(r["input_rows"]) for r in rows if r["engine"] == e) for e in by}
    # Spark's input counts the punctuation rows it filters out, ours every row of the same stream
    assert read["watermark_same_input"] == read["punctuated"] > read["watermark"]
    md = (tmp_path / f"{name}.md").read_text()
    assert "throughput punctuated / watermark_same_input" in md
    assert "throughput watermark_same_input / watermark" in md
    assert f"first ran its engine's query over the first {Q7_WARMUP:,} events, untimed" in md
    # the timed run's batches cover all the events from the first: 3 batches of 10 K (and the
    # watermark's batch without data), not the warm-up's
    assert {e: max(int(r["events"]) for r in rows if r["engine"] == e) for e in by} == dict.fromkeys(by, events)
    assert sum(1 for r in rows if r["engine"] == "punctuated") == 3
    # per partition (2): a stateful task in each micro-batch of the timed run, a scan task in
    # each with input (not in the watermark plan's last, which only closes windows)
    for engine, s in by.items():
        batches = [int(r["input_rows"]) for r in rows if r["engine"] == engine]
        tm = s["task_metrics"]
        assert tm["stateful"]["tasks"] == 2 * len(batches), (engine, tm)
        assert tm["scan"]["tasks"] == 2 * sum(1 for n in batches if n > 0), (engine, tm)
        assert tm["all"]["cpu_ms"] >= tm["scan"]["cpu_ms"] > 0 and tm["stateful"]["run_ms"] > 0
    assert "| punctuated | stateful | 6 |" in md


def test_time_punctuations_only(q7_run):
    """``--time-punctuations-only``: the punctuated and same-input engines read the bid stream
    with its ``dateTime<=`` punctuations only (the source's ``auctionPunctuations=false``): the
    same bids, fewer rows read (no punctuation per expired auction), the batch answer still; the
    Markdown says so. It is for the windowed queries only. The calibration engine
    "watermark_again" is the watermark engine under another name: the same rows, state and
    results, and the Markdown gives their ratio (the A/A comparison)."""
    tmp_path, events = q7_run, Q7_EVENTS
    name = f"nexmark_q7_{events}"
    by = {s["engine"]: s for s in json.loads((tmp_path / f"{name}.json").read_text())}
    assert all(s["results_match"] is True for s in by.values()), by
    with open(tmp_path / f"{name}.csv") as f:
        rows = list(csv.DictReader(f))
    read = {e: [int(r["input_rows"]) for r in rows if r["engine"] == e] for e in by}
    # per micro-batch (3 of 10 K events): Spark's 46 bids of every 50 events, and on the
    # punctuated stream one dateTime<= punctuation per partition (2), nothing else
    bids = Q7_EVENTS // 3 * 46 // 50
    assert read["watermark"][:3] == [bids] * 3
    assert read["punctuated"] == read["watermark_same_input"][:3] == [bids + 2] * 3
    again, spark = by["watermark_again"], by["watermark"]
    assert read["watermark_again"] == read["watermark"]
    assert (again["result_rows"], again["max_state_rows"]) == (spark["result_rows"], spark["max_state_rows"]) != (0, 0)
    md = (tmp_path / f"{name}.md").read_text()
    assert "throughput watermark_again / watermark" in md and "throughput punctuated / watermark_again" in md
    assert "(`--time-punctuations-only`, the source's `auctionPunctuations=false`)" in md


def test_punctuated_against_another_copy_of_itself(q7_run):
    """The optional "punctuated_alt" engine is the punctuated engine run from the package copy
    at ``--alt-path`` (another jar, when two versions are compared): its children import that
    copy, its rows, state and results are the punctuated engine's, and the Markdown names both
    packages and gives the pairwise ratio. Without ``--alt-path`` it is refused."""
    tmp_path, events = q7_run, Q7_EVENTS
    name = f"nexmark_q7_{events}"
    alt = Path((tmp_path / "alt").read_text()).resolve()
    by = {s["engine"]: s for s in json.loads((tmp_path / f"{name}.json").read_text())}
    ours, other = by["punctuated"], by["punctuated_alt"]
    assert Path(other["package"]) == alt / "punctuated"
    assert not Path(ours["package"]).is_relative_to(alt) and Path(ours["package"]).name == "punctuated"
    assert other["results_match"] is True
    assert (other["result_rows"], other["max_punctuations_held"]) == (ours["result_rows"], ours["max_punctuations_held"])
    with open(tmp_path / f"{name}.csv") as f:
        rows = list(csv.DictReader(f))
    read = {e: [int(r["input_rows"]) for r in rows if r["engine"] == e] for e in ("punctuated", "punctuated_alt")}
    assert read["punctuated_alt"] == read["punctuated"]
    md = (tmp_path / f"{name}.md").read_text()
    assert "throughput punctuated / punctuated_alt" in md and f"`{alt / 'punctuated'}`" in md
    refused = subprocess.run([sys.executable, "-m", "benchmarks.nexmark", "--query", "q7", "--engines", "punctuated_alt"],
                             cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "the engine punctuated_alt and --alt-path go together" in refused.stderr
    refused = subprocess.run([sys.executable, "-m", "benchmarks.nexmark", "--query", "q8", "--time-punctuations-only"],
                             cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "is for the windowed queries (q5, q7), not q8" in refused.stderr


def test_spark_settings_reach_every_engine(q7_run):
    """``--spark-conf KEY=VALUE`` is set in every engine's session before its JVM starts: each
    engine's summary records the value its running session read back from its ``SparkConf``,
    and the Markdown names the setting. In the q7 run it makes Spark write every shuffle with
    its sort-based writers (no file per partition), under which every engine, the replicating
    exchange of ours included, still gives the batch answer. A setting without ``=`` is
    refused."""
    tmp_path, events = q7_run, Q7_EVENTS
    name = f"nexmark_q7_{events}"
    by = {s["engine"]: s for s in json.loads((tmp_path / f"{name}.json").read_text())}
    key = "spark.shuffle.sort.bypassMergeThreshold"
    assert {e: s["spark_conf"] for e, s in by.items()} == dict.fromkeys(by, {key: str(NO_BYPASS)})
    assert all(s["results_match"] is True for s in by.values()), by
    md = (tmp_path / f"{name}.md").read_text()
    assert f"Every engine's session set `{key}={NO_BYPASS}` (`--spark-conf`)." in md
    done = subprocess.run([sys.executable, "-m", "benchmarks.nexmark", "--query", "q7", "--spark-conf", key],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and f"--spark-conf takes KEY=VALUE, not '{key}'" in done.stderr
