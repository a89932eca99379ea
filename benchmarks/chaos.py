"""Chaos harness: punctuated queries killed at random points, restarted from their checkpoint.

Each *run* plays one query over a deterministic stream of JSON files (one file per input per
micro-batch, ``maxFilesPerTrigger=1``, ``Trigger.AvailableNow``) in a child process that
writes to a sink users use for exactly-once output: the **file sink** (``parquet`` with its
``_spark_metadata`` log) or **foreachBatch writing idempotently by batch id** (the batch's
rows overwrite ``out/batch_id=<b>/``). The parent kills the child's whole process group (the
Python driver and its JVM: a driver crash) with SIGKILL at a random point, restarts it from
the checkpoint, maybe kills it again, and finally lets it finish; the output must equal the
batch answer as a multiset: no row lost, none duplicated.

Kill points (the point recorded is the one observed in the checkpoint when the child died):

* ``in-batch``: after ``offsets/<b>`` is written, a random delay into the batch;
* ``state-committed``: foreachBatch sink, batch b's rows computed (its state store versions
  committed) but not yet written by the sink, ``commits/<b>`` absent;
* ``between-batches``: right after ``commits/<b>`` appears.

Queries (``QUERIES``): ``join`` (auctions ⋈ bids, ``punctuatedSymmetricHashJoin``), ``agg``
(the auction query: that join grouped by auction, append mode), ``dedup`` (bids deduplicated
by auction and bidder) and ``multiway`` (``x ⋈ y ON k ⋈ z ON v``, one
``punctuatedMultiJoin``). Usage::

    .venv/bin/python -m benchmarks.chaos --kills 50 --provider rocksdb --out /tmp/chaos
    .venv/bin/python -m benchmarks.chaos --kills 4 --provider hdfs --out /tmp/c --master local-cluster[2,1,1024]

Writes ``DIR/chaos_<provider>.json`` and ``DIR/chaos_<provider>.md`` (one line per kill) and
exits 1 when any run lost or duplicated a row. The same module runs the child
(``python -m benchmarks.chaos run ...``) and serves the cluster tests (``tests/cluster``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROVIDERS = {
    "hdfs": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "rocksdb": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
}
STEPS = 8

# ---------------------------------------------------------------------------------------------
# The stream: deterministic for a seed; every punctuation is valid (no row after it)

SCHEMAS = {
    "auctions": "id BIGINT, seller BIGINT, category BIGINT, is_punct BOOLEAN",
    "bids": "auction BIGINT, bidder BIGINT, price BIGINT, is_punct BOOLEAN",
    "x": "k BIGINT, xv BIGINT, p BOOLEAN",
    "y": "k BIGINT, v BIGINT, p BOOLEAN",
    "z": "v BIGINT, zw BIGINT, p BOOLEAN",
}


def generate(seed: int, steps: int = STEPS, auctions: int = 60, keys: int = 40, values: int = 12) -> dict:
    """Per input, ``steps`` lists of rows (dicts). Auctions open at a step, get bids (bidders
    repeat, so deduplication has work) and are closed by a bids punctuation 1-3 steps later;
    every auction is closed by the last step, so append-mode output is complete. The chain
    ``x(k) ⋈ y(k, v) ⋈ z(v)``: k and v close at random steps, y punctuates both."""
    rnd = random.Random(seed)
    out = {name: [[] for _ in range(steps)] for name in SCHEMAS}
    for a in range(auctions):
        opens = rnd.randrange(0, steps - 2)
        closes = min(steps - 1, opens + rnd.randint(1, 3))
        out["auctions"][opens].append({"id": a, "seller": a % 7, "category": a % 5, "is_punct": False})
        for s in range(opens, closes):
            for _ in range(rnd.randint(0, 3)):
                out["bids"][s].append({"auction": a, "bidder": rnd.randrange(4),
                                       "price": rnd.randrange(1, 100), "is_punct": False})
        out["bids"][closes].append({"auction": a, "bidder": None, "price": None, "is_punct": True})
    v_close = {v: rnd.randint(2, steps - 1) for v in range(values)}
    for v, closes in v_close.items():
        for s in range(closes):
            if rnd.random() < 0.4:
                out["z"][s].append({"v": v, "zw": rnd.randrange(1000), "p": False})
        out["z"][closes].append({"v": v, "zw": None, "p": True})
        out["y"][closes].append({"k": None, "v": v, "p": True})
    for k in range(keys):
        opens = rnd.randrange(0, steps - 2)
        closes = min(steps - 1, opens + rnd.randint(1, 3))
        for s in range(opens, closes):
            if rnd.random() < 0.7:
                out["x"][s].append({"k": k, "xv": rnd.randrange(1000), "p": False})
            open_v = [v for v, c in v_close.items() if c > s]
            if open_v and rnd.random() < 0.8:
                out["y"][s].append({"k": k, "v": rnd.choice(open_v), "p": False})
        out["x"][closes].append({"k": k, "xv": None, "p": True})
        out["y"][closes].append({"k": k, "v": None, "p": True})
    return out


def write_inputs(data: Path, stream: dict) -> None:
    """One JSON-lines file per input and step, modification times in step order."""
    base = time.time() - 10_000
    for name, steps in stream.items():
        d = data / name
        d.mkdir(parents=True, exist_ok=True)
        for s, rows in enumerate(steps):
            f = d / f"step-{s:04d}.json"
            f.write_text("".join(json.dumps(r) + "\n" for r in rows))
            os.utime(f, (base + s, base + s))


def _rows(stream: dict, name: str, marker: str) -> list[dict]:
    return [r for step in stream[name] for r in step if not r[marker]]


def expected(query: str, stream: dict) -> Counter:
    """The batch answer of ``query`` over ``stream`` (punctuation rows left out), as a multiset
    of tuples in the query's output column order."""
    auctions = {r["id"]: r for r in _rows(stream, "auctions", "is_punct")}
    bids = _rows(stream, "bids", "is_punct")
    if query == "join":
        return Counter((b["auction"], auctions[b["auction"]]["category"], b["bidder"], b["price"])
                       for b in bids if b["auction"] in auctions)
    if query == "agg":
        groups: dict = {}
        for b in bids:
            groups.setdefault(b["auction"], []).append(b["price"])
        return Counter((a, auctions[a]["category"], len(p), sum(p), max(p)) for a, p in groups.items())
    if query == "dedup":
        return Counter({(b["auction"], b["bidder"]) for b in bids})
    if query == "multiway":
        xs, ys, zs = (_rows(stream, n, "p") for n in ("x", "y", "z"))
        return Counter((x["k"], x["xv"], y["v"], z["zw"]) for x in xs for y in ys if x["k"] == y["k"]
                       for z in zs if y["v"] == z["v"])
    raise ValueError(query)


def compare(query: str, stream: dict, rows: list) -> dict:
    """Lost and duplicated rows of ``rows`` against the batch answer."""
    want, got = expected(query, stream), Counter(tuple(r) for r in rows)
    return {"expected": sum(want.values()), "rows": sum(got.values()),
            "lost": sum((want - got).values()), "duplicated": sum((got - want).values())}


# ---------------------------------------------------------------------------------------------
# The child: one run of a query until AvailableNow drains the files (or it is killed)

QUERIES = {
    "join": ("auctions", "bids"),
    "agg": ("auctions", "bids"),
    "dedup": ("bids",),
    "multiway": ("x", "y", "z"),
}


def build_query(spark, query: str, data: Path):
    """The streaming DataFrame of ``query`` over the files under ``data``."""
    import punctuated
    from pyspark.sql import functions as F

    def stream(name, **decl):
        df = (spark.readStream.schema(SCHEMAS[name]).option("maxFilesPerTrigger", 1)
              .json(str(data / name)))
        return punctuated.with_schemes(df, name=name, **decl)

    if query in ("join", "agg"):
        a = stream("auctions", unique=["id"], marker="is_punct")
        b = stream("bids", schemes=["auction"], marker="is_punct")
        j = a.join(b, a.id == b.auction)
        if query == "join":
            return j.select(a.id.alias("auction"), "category", "bidder", "price")
        return (j.groupBy(a.id.alias("auction"), "category")
                .agg(F.count("*").alias("bids"), F.sum("price").alias("total"), F.max("price").alias("final")))
    if query == "dedup":
        b = stream("bids", schemes=["auction"], marker="is_punct")
        return b.dropDuplicates(["auction", "bidder"]).select("auction", "bidder")
    if query == "multiway":
        x = stream("x", schemes=["k"], marker="p")
        y = stream("y", schemes=["k", "v"], marker="p")
        z = stream("z", schemes=["v"], marker="p")
        return (x.join(y, x.k == y.k).join(z, y.v == z.v)
                .select(x.k, x.xv, y.v, z.zw))
    raise ValueError(query)


def session(master: str, provider: str, app: str = "punctuated-chaos"):
    """A session with the bundled extension against ``master`` (1 GiB executors)."""
    from pyspark.sql import SparkSession

    import punctuated

    builder = (SparkSession.builder.master(master).appName(app)
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.driver.memory", "1g")
               .config("spark.executor.memory", "1g")
               .config("spark.cores.max", "2")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.streaming.stateStore.providerClass", PROVIDERS[provider]))
    spark = punctuated.configure_spark(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def child(args) -> int:
    work = Path(args.work)
    markers = work / "markers"
    markers.mkdir(parents=True, exist_ok=True)
    spark = session(args.master, args.provider)
    (work / "app_id").write_text(spark.sparkContext.applicationId)
    # two local-cluster drivers started in the same second get the same application id: their
    # executors are told apart by the driver's port in their --driver-url
    (work / "driver_port").write_text(spark.sparkContext.getConf().get("spark.driver.port"))
    df = build_query(spark, args.query, work / "data")
    out = work / "out"
    holds = {int(b) for b in args.hold_batches.split(",") if b}
    writer = df.writeStream.outputMode("append").trigger(availableNow=True) \
        .option("checkpointLocation", str(work / "checkpoint"))
    if args.sink == "file":
        writer = writer.format("parquet").option("path", str(out))
    else:
        def write(batch, batch_id):
            (markers / f"started-{batch_id}").touch()
            if batch_id in holds and args.compute_first:
                batch = batch.persist()
                batch.count()            # runs the stateful operators: their state is committed
                (markers / f"computed-{batch_id}").touch()
            if batch_id in holds:
                time.sleep(args.hold_seconds)
            batch.write.mode("overwrite").parquet(str(out / f"batch_id={batch_id}"))
            (markers / f"written-{batch_id}").touch()
            batch.unpersist()
        writer = writer.foreachBatch(write)
    q = writer.start()
    q.awaitTermination()
    if q.exception() is not None:
        raise SystemExit(f"query failed: {q.exception()}")
    rows = []
    if out.exists() and any(out.iterdir()):
        result = spark.read.parquet(str(out))
        if "batch_id" in result.columns:
            result = result.drop("batch_id")
        rows = [list(r) for r in result.collect()]
    (work / "result.json").write_text(json.dumps(rows))
    spark.stop()
    return 0


# ---------------------------------------------------------------------------------------------
# The parent: start, watch, kill, restart

class Run:
    """One query's work directory (data, checkpoint, output, markers) and its child process."""

    def __init__(self, work: Path, query: str, sink: str, provider: str, master: str, seed: int):
        self.work, self.query, self.sink, self.provider, self.master = work, query, sink, provider, master
        self.stream = generate(seed)
        shutil.rmtree(work, ignore_errors=True)
        write_inputs(work / "data", {n: self.stream[n] for n in QUERIES[query]})
        self.proc: subprocess.Popen | None = None
        self.attempts = 0

    @property
    def checkpoint(self) -> Path:
        return self.work / "checkpoint"

    def start(self, hold_batches=(), hold_seconds: float = 0.0, compute_first: bool = False) -> None:
        cmd = [sys.executable, "-m", "benchmarks.chaos", "run", "--work", str(self.work), "--query",
               self.query, "--sink", self.sink, "--provider", self.provider, "--master", self.master,
               "--hold-batches", ",".join(map(str, hold_batches)), "--hold-seconds", str(hold_seconds)]
        if compute_first:
            cmd.append("--compute-first")
        self.attempts += 1
        log = open(self.work / f"child-{self.attempts}.log", "w")
        env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True, env=env)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill_driver(self) -> None:
        """SIGKILL to the child's process group: the Python driver, its JVM and (local modes)
        the executors it launched, at once."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()

    def stop(self) -> None:
        if self.alive():
            self.kill_driver()

    def finish(self, timeout: float = 600) -> dict:
        """Runs to the end from the checkpoint; the comparison with the batch answer."""
        if not self.alive():
            self.start()
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill_driver()
            rc = "timeout"
        if rc != 0:
            tail = (self.work / f"child-{self.attempts}.log").read_text()[-3000:]
            raise RuntimeError(f"{self.query} run failed ({rc}):\n{tail}")
        rows = json.loads((self.work / "result.json").read_text())
        return compare(self.query, self.stream, rows)

    # what the checkpoint says
    def _ids(self, sub: str) -> list[int]:
        d = self.checkpoint / sub
        return sorted(int(p.name) for p in d.iterdir() if p.name.isdigit()) if d.is_dir() else []

    def offsets(self) -> list[int]:
        return self._ids("offsets")

    def commits(self) -> list[int]:
        return self._ids("commits")

    def marker(self, name: str) -> bool:
        return (self.work / "markers" / name).exists()

    def wait_until(self, cond, timeout: float = 300, poll: float = 0.02) -> bool:
        end = time.time() + timeout
        while time.time() < end:
            if cond():
                return True
            if not self.alive():
                return False
            time.sleep(poll)
        return False

    def observed_point(self) -> tuple[str, int | None]:
        """Where the last run stopped, from the checkpoint: ``between-batches`` (every planned
        batch committed), ``state-committed`` (foreachBatch computed the batch, sink and commit
        log not written), else ``in-batch``."""
        offs, coms = self.offsets(), self.commits()
        if not offs:
            return "before-first-batch", None
        b = offs[-1]
        if coms and coms[-1] == b:
            return "between-batches", b
        if self.marker(f"computed-{b}") and not self.marker(f"written-{b}"):
            return "state-committed", b
        return "in-batch", b


def executor_pids(app_id: str, driver_port: str | None = None) -> list[int]:
    """PIDs of the executor JVMs of application ``app_id`` (``CoarseGrainedExecutorBackend``
    with ``--app-id <app_id>`` in their command line, read from ``/proc``; as ``ps -eww``),
    and, given ``driver_port``, whose ``--driver-url`` ends with it (local-cluster application
    ids are a timestamp: two drivers started in the same second share one).

    >>> executor_pids("app-00000000000000-0000", "1")
    []
    """
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"org.apache.spark.executor.CoarseGrainedExecutorBackend" in args and app_id.encode() in args and (
                driver_port is None or any(a.startswith(b"spark://") and a.endswith(f":{driver_port}".encode())
                                           for a in args)):
            pids.append(int(proc.name))
    return sorted(pids)


def kill_one(run: Run, rnd: random.Random, point: str, batch: int) -> dict:
    """Starts ``run`` (from its checkpoint), kills its driver at ``point`` of ``batch``;
    the observed point, or ``completed`` when the run ended first."""
    if point == "state-committed":
        run.start(hold_batches=[batch], hold_seconds=30, compute_first=True)
        reached = run.wait_until(lambda: run.marker(f"computed-{batch}"))
    elif point == "in-batch":
        run.start()
        reached = run.wait_until(lambda: batch in run.offsets())
        if reached:
            time.sleep(rnd.uniform(0.0, 0.8))
    else:
        run.start()
        reached = run.wait_until(lambda: batch in run.commits())
    if not reached or not run.alive():
        run.proc.wait()
        return {"planned": point, "batch": batch, "observed": "completed"}
    run.kill_driver()
    observed, at = run.observed_point()
    return {"planned": point, "batch": batch, "observed": observed, "observed_batch": at}


def chaos(kills: int, provider: str, out: Path, master: str, seed: int) -> dict:
    """``kills`` driver kills over the queries (2-4 per run, then a run to the end)."""
    rnd = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    records, runs, done = [], [], 0
    names = list(QUERIES)
    while done < kills:
        query = names[len(runs) % len(names)]
        sink = rnd.choice(["file", "foreach"])
        run = Run(out / "work" / f"run-{len(runs)}", query, sink, provider, master, rnd.randrange(10_000))
        kills_here, batch = [], -1
        for _ in range(min(rnd.randint(2, 4), kills - done)):
            points = ["in-batch", "between-batches"] + (["state-committed"] if sink == "foreach" else [])
            point = rnd.choice(points)
            if batch + 1 > STEPS - 2:
                break
            batch = rnd.randint(batch + 1, min(batch + 3, STEPS - 2))
            t0 = time.time()
            k = kill_one(run, rnd, point, batch)
            k["seconds"] = round(time.time() - t0, 1)
            kills_here.append(k)
            if k["observed"] == "completed":
                break
            done += 1
        t0 = time.time()
        try:
            result = run.finish()
        except RuntimeError as e:
            result = {"error": str(e)[-1500:], "lost": None, "duplicated": None}
        result["seconds"] = round(time.time() - t0, 1)
        runs.append({"run": len(runs), "query": query, "sink": sink, "kills": kills_here, "result": result})
        print(json.dumps(runs[-1]), flush=True)
        report = _report(provider, master, seed, runs, out)   # after every run: a partial record survives
    return report


def _report(provider: str, master: str, seed: int, runs: list, out: Path) -> dict:
    ok = all(r["result"].get("lost") == 0 and r["result"].get("duplicated") == 0 for r in runs)
    kills = sum(1 for r in runs for k in r["kills"] if k["observed"] != "completed")
    report = {"provider": provider, "master": master, "seed": seed, "kills": kills, "runs": runs, "ok": ok}
    (out / f"chaos_{provider}.json").write_text(json.dumps(report, indent=1))
    (out / f"chaos_{provider}.md").write_text(markdown(report))
    return report


def merge(paths: list[Path]) -> dict:
    """One report from the ``chaos_<provider>.json`` of harness runs made in parallel (same
    provider, other seeds): their runs in order, the commands listed."""
    parts = [json.loads(p.read_text()) for p in paths]
    runs = [dict(r, run=f"{part['seed']}/{r['run']}") for part in parts for r in part["runs"]]
    kills = sum(part["kills"] for part in parts)
    return {"provider": parts[0]["provider"], "master": parts[0]["master"],
            "seed": ",".join(str(part["seed"]) for part in parts), "kills": kills, "runs": runs,
            "ok": all(part["ok"] for part in parts)}


def markdown(report: dict) -> str:
    seeds = str(report["seed"]).split(",")
    commands = [f"`.venv/bin/python -m benchmarks.chaos --kills N --provider {report['provider']} "
                f"--master '{report['master']}' --seed {seed} --out DIR`" for seed in seeds]
    lines = [f"# Chaos: {report['kills']} driver kills, {report['provider']} state store",
             "", "Command" + ("s (run in parallel; a run is `seed/run`)" if len(seeds) > 1 else "") + ": "
             + ", ".join(commands), "",
             "| run | query | sink | kills (planned → observed, batch) | last run s | expected | rows | lost | duplicated |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in report["runs"]:
        kills = "; ".join(f"{k['planned']} b{k['batch']} → {k['observed']}"
                          + (f" b{k['observed_batch']}" if k.get("observed_batch") is not None else "")
                          for k in r["kills"])
        res = r["result"]
        lines.append(f"| {r['run']} | {r['query']} | {r['sink']} | {kills} | {res['seconds']} | "
                     f"{res.get('expected', '-')} | {res.get('rows', '-')} | {res.get('lost')} | "
                     f"{res.get('duplicated')} |")
    observed = Counter(k["observed"] for r in report["runs"] for k in r["kills"])
    lines += ["", "Kill points observed: " + ", ".join(f"{p} {n}" for p, n in sorted(observed.items())),
              "", "Result: " + ("every run equals the batch answer (0 rows lost, 0 duplicated)"
                                if report["ok"] else "**a run lost or duplicated rows or failed**")]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd")
    c = sub.add_parser("run", help="(child) one run of a query from its checkpoint")
    c.add_argument("--work", required=True)
    c.add_argument("--query", choices=list(QUERIES), required=True)
    c.add_argument("--sink", choices=["file", "foreach"], default="file")
    c.add_argument("--provider", choices=list(PROVIDERS), default="hdfs")
    c.add_argument("--master", default="local[2]")
    c.add_argument("--hold-batches", default="")
    c.add_argument("--hold-seconds", type=float, default=0.0)
    c.add_argument("--compute-first", action="store_true")
    p.add_argument("--kills", type=int, default=6)
    p.add_argument("--provider", choices=list(PROVIDERS), default="hdfs")
    p.add_argument("--out", default="chaos-output")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--merge", nargs="*", help="chaos_<provider>.json files to merge into --out")
    args = p.parse_args(argv)
    if args.cmd == "run":
        return child(args)
    if args.merge:
        report = merge([Path(m) for m in args.merge])
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / f"chaos_{report['provider']}.md").write_text(markdown(report))
        print(markdown(report))
        return 0 if report["ok"] else 1
    report = chaos(args.kills, args.provider, Path(args.out), args.master, args.seed)
    print(markdown(report))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
