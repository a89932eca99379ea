"""Traces of two streams R and S: what the shedding tools replay and optimise over.

A :class:`Trace` is a list of arrivals ``(time, stream, value)`` ordered by time (and,
within one time step, by the order they were recorded), ``stream`` being ``"R"`` or
``"S"`` and ``value`` the join attribute (an int). The paper's model (Das, Gehrke and
Riedewald 2005, §2.1) has exactly one arrival per stream per time step; the general
case (any number per step, as one micro-batch of a streaming query) is supported by
every tool in :mod:`punctuated.shedding`.

Window semantics (§2.1): a tuple arriving at time ``i`` is in the window at times
``i .. i + w - 1``. Arrivals at time ``t`` join the tuples of the other stream held in
memory and each other (the paper's "fast CPU" model, §2.3: arriving tuples sit in
input buffer cells and are always joined before the operator decides to keep them).

Example::

    >>> t = Trace.from_streams([1, 1, 1, 3, 2], [2, 3, 1, 1, 3])   # Figure 3
    >>> t.num_steps, len(t)
    (5, 10)

Files are JSON lines, one arrival per line: ``{"time": 0, "stream": "R", "value": 1}``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

STREAMS = ("R", "S")


def other(stream: str) -> str:
    """The other stream's name: ``other("R") == "S"``."""
    return "S" if stream == "R" else "R"


@dataclass(frozen=True)
class Arrival:
    """One tuple: its arrival ``time``, ``stream`` (``"R"``/``"S"``), join ``value`` and
    ``seq``, its position in the trace (the tie-breaker "earlier arrival")."""

    time: int
    stream: str
    value: int
    seq: int


class Trace:
    """An ordered, immutable list of :class:`Arrival` of streams R and S."""

    def __init__(self, arrivals: Iterable[tuple[int, str, int]]):
        rows = list(arrivals)
        for time, stream, value in rows:
            if stream not in STREAMS:
                raise ValueError(f"trace arrival stream must be 'R' or 'S', got {stream!r}")
            if not isinstance(time, int) or time < 0:
                raise ValueError(f"trace arrival time must be an int >= 0, got {time!r}")
            if not isinstance(value, int):
                raise ValueError(f"trace arrival value must be an int, got {value!r}")
        rows.sort(key=lambda a: a[0])  # stable: recorded order within a time step
        self.arrivals: tuple[Arrival, ...] = tuple(
            Arrival(t, s, v, i) for i, (t, s, v) in enumerate(rows)
        )

    @classmethod
    def from_streams(cls, r: Iterable[int], s: Iterable[int]) -> "Trace":
        """The paper's synchronous model: ``r[t]`` and ``s[t]`` arrive at time ``t``
        (R's arrival recorded first)."""
        r, s = list(r), list(s)
        rows: list[tuple[int, str, int]] = []
        for t in range(max(len(r), len(s))):
            if t < len(r):
                rows.append((t, "R", r[t]))
            if t < len(s):
                rows.append((t, "S", s[t]))
        return cls(rows)

    def __len__(self) -> int:
        return len(self.arrivals)

    def __iter__(self) -> Iterator[Arrival]:
        return iter(self.arrivals)

    def __eq__(self, o: object) -> bool:
        return isinstance(o, Trace) and o.arrivals == self.arrivals

    def __repr__(self) -> str:
        return f"Trace({len(self)} arrivals, {self.num_steps} steps)"

    @property
    def num_steps(self) -> int:
        """Number of time steps (last arrival time + 1; 0 for an empty trace)."""
        return self.arrivals[-1].time + 1 if self.arrivals else 0

    def steps(self) -> list[list[Arrival]]:
        """Arrivals grouped by time step, ``steps()[t]`` = the arrivals at time ``t``
        (one batch each; empty lists for steps without arrivals)."""
        out: list[list[Arrival]] = [[] for _ in range(self.num_steps)]
        for a in self.arrivals:
            out[a.time].append(a)
        return out

    def values(self, stream: str) -> list[int]:
        """The join values of one stream in arrival order."""
        return [a.value for a in self.arrivals if a.stream == stream]

    # --- files -------------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        """Write the trace as JSON lines (one ``{"time","stream","value"}`` per line)."""
        with open(path, "w", encoding="utf-8") as f:
            for a in self.arrivals:
                f.write(json.dumps({"time": a.time, "stream": a.stream, "value": a.value}) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> "Trace":
        """Read a trace written by :meth:`save` (blank lines are ignored)."""
        rows = []
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    o = json.loads(line)
                    rows.append((o["time"], o["stream"], o["value"]))
                except (ValueError, KeyError) as e:
                    raise ValueError(
                        f"{path}:{n}: expected {{\"time\": int, \"stream\": \"R\"|\"S\", "
                        f"\"value\": int}}, got {line.strip()!r} ({e})"
                    ) from e
        return cls(rows)
