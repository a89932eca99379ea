"""The trace model, the paper's workloads, EXACT and the online policies (Das et al. 2005, §4.2)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from punctuated.shedding import vectors
from punctuated.shedding.online import FrequencyEstimator, exact_output, replay
from punctuated.shedding.trace import Trace
from punctuated.shedding.workloads import FIGURE3, paper_sliding_window, zipf_streams

VECTORS = Path(__file__).resolve().parents[2] / "testdata" / "shedding_estimator_vectors.json"


def naive_exact(trace: Trace, window: int, warmup: int = 0) -> int:
    """Every R x S pair, counted when the later tuple arrives."""
    return sum(
        1
        for a in trace for b in trace
        if a.stream == "R" and b.stream == "S" and a.value == b.value
        and abs(a.time - b.time) < window and max(a.time, b.time) >= warmup
    )


def random_trace(rng: random.Random, steps: int, domain: int) -> Trace:
    rows = [(t, rng.choice("RS"), rng.randint(1, domain)) for t in range(steps) for _ in range(rng.randint(0, 3))]
    return Trace(rows)


def test_file_round_trip(tmp_path):
    t = random_trace(random.Random(1), 30, 5)
    t.save(tmp_path / "t.jsonl")
    assert Trace.load(tmp_path / "t.jsonl") == t
    assert (tmp_path / "t.jsonl").read_text().splitlines()[0].startswith('{"time": 0')


def test_bad_file_names_line_and_format(tmp_path):
    (tmp_path / "bad.jsonl").write_text('{"time": 0, "stream": "R", "value": 1}\n{"time": 1, "strem": "S"}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2: expected"):
        Trace.load(tmp_path / "bad.jsonl")
    with pytest.raises(ValueError, match="stream must be 'R' or 'S'"):
        Trace([(0, "T", 1)])


def test_workloads_are_seeded_and_skewed():
    a, b = zipf_streams(2000, 1.0, 50, seed=3), zipf_streams(2000, 1.0, 50, seed=3)
    assert a == b and a != zipf_streams(2000, 1.0, 50, seed=4)
    r = a.values("R")
    assert set(r) <= set(range(1, 51))
    top = max(r.count(v) for v in set(r))
    assert top > 2000 / 50 * 4  # Zipf(1) over 50: the top value has ~22% of arrivals
    u = zipf_streams(5000, 0.0, 50, seed=3).values("S")
    assert max(u.count(v) for v in set(u)) < 5000 / 50 * 1.6  # uniform
    s = paper_sliding_window(400)
    assert (s.window, s.warmup, s.trace.num_steps) == (400, 800, 4800)
    assert s.memories == (40, 100, 200, 400, 600, 800)


def test_exact_figure3_and_against_naive():
    assert exact_output(FIGURE3.trace(), FIGURE3.window) == FIGURE3.exact_output == 7
    rng = random.Random(5)
    for _ in range(200):
        t = random_trace(rng, rng.randint(1, 8), rng.randint(1, 3))
        w, warm = rng.randint(1, 4), rng.randint(0, 3)
        assert exact_output(t, w, warm) == naive_exact(t, w, warm)


def test_memory_2w_is_exact_and_output_is_a_subset():
    rng = random.Random(9)
    for _ in range(100):
        t = Trace.from_streams([rng.randint(1, 3) for _ in range(10)], [rng.randint(1, 3) for _ in range(10)])
        w = rng.randint(1, 4)
        ex = exact_output(t, w)
        for policy in ("prob", "life", "rand"):
            for alloc in ("fixed", "variable"):
                assert replay(t, w, 2 * w, policy, alloc).output == ex
                assert replay(t, w, rng.randint(0, 2 * w), policy, alloc).output <= ex


def test_estimator_by_hand():
    e = FrequencyEstimator(h=4, k=10)
    e.update([1, 1, 2])
    e.update([3, 3])  # 5 arrivals since halving >= 4: {1: 3, 2: 1, 3: 2} halves to {1: 1, 3: 1}
    assert e.counts == {1: 1, 3: 1} and e.total == 2 and e.since_halving == 0
    e = FrequencyEstimator(h=100, k=2)
    e.update([5, 4, 3])  # tie at 1: the smaller values 3 and 4 stay
    assert e.counts == {3: 1, 4: 1}


def test_prob_keeps_what_the_other_stream_sends():
    # S sends value 1 all the time; R alternates 1 and 2; one R slot: PROB holds an R "1".
    t = Trace.from_streams([1, 2] * 20, [1] * 40)
    prob = replay(t, 10, 2, "prob").output
    rand = replay(t, 10, 2, "rand").output
    assert prob > rand
    held = replay(t, 10, 2, "prob", record=True).held_after_step
    assert all(v == 1 for step in held[2:] for (x, _, v) in step if x == "R")


def test_deterministic():
    s = paper_sliding_window(40, counted_steps=300, seed=2)
    for p in ("prob", "life", "rand"):
        runs = {replay(s.trace, 40, 20, p, "variable", s.warmup, seed=5).output for _ in range(2)}
        assert len(runs) == 1


def test_shared_vectors_file_is_current_and_holds():
    doc = json.loads(VECTORS.read_text())
    assert doc == json.loads(json.dumps(vectors.build())), "regenerate: python -m punctuated.shedding.vectors"
    assert len(doc["estimator"]) >= 5 and len(doc["replay"]) >= 50
    for c in doc["estimator"]:
        e = FrequencyEstimator(c["H"], c["K"])
        for batch, after in zip(c["batches"], c["after"]):
            e.update(batch)
            assert [[v, n] for v, n in sorted(e.counts.items())] == after, c["name"]
    for c in doc["replay"]:
        res = replay(Trace([tuple(a) for a in c["arrivals"]]), c["window"], c["memory"], c["policy"],
                     c["allocation"], c["warmup"], h=c["H"], k=c["K"], record=True)
        assert res.output == c["output"] and res.shed == c["shed"], c["name"]
        assert [[list(x) for x in s] for s in res.held_after_step] == c["held"], c["name"]
        for step in c["held"]:
            cap = c["memory"]
            assert len(step) <= cap
            if c["allocation"] == "fixed":
                assert sum(1 for x in step if x[0] == "R") <= cap - cap // 2


def test_command_line_generate_and_compare(tmp_path, capsys):
    from punctuated.shedding.__main__ import main

    path = tmp_path / "t.jsonl"
    assert main(["generate", str(path), "--steps", "120", "--seed", "4"]) == 0
    assert Trace.load(path) == zipf_streams(120, seed=4)
    assert main(["compare", str(path), "--window", "20", "--memory", "10", "--warmup", "40"]) == 0
    got = {line.split()[0]: int(line.split()[1]) for line in capsys.readouterr().out.splitlines()}
    assert set(got) == {"exact", "opt", "prob", "life", "rand"}
    assert got["exact"] == exact_output(Trace.load(path), 20, 40)
    assert max(got["prob"], got["life"], got["rand"]) <= got["opt"] <= got["exact"]


def test_whole_trace_counts_instead_of_the_online_estimate():
    # One R slot. At step 1 S has sent only a 2, so the online estimate keeps r(0) = 2;
    # over the whole trace S sends 1 far more often, so the paper's setting keeps r(1) = 1.
    t = Trace.from_streams([2, 1, 3, 3, 3, 3], [2, 5, 1, 1, 1, 1])
    online = replay(t, 6, 2, "prob", record=True).held_after_step[1]
    whole = replay(t, 6, 2, "prob", record=True, whole_trace=True).held_after_step[1]
    assert ("R", 0, 2) in online and ("R", 1, 1) in whole
    assert replay(t, 6, 2, "prob", whole_trace=True).output > replay(t, 6, 2, "prob").output
