"""The benchmarks' side-by-side timer (benchmarks/_timing.py)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from _timing import best_of  # noqa: E402


def test_a_fast_candidate_is_timed_over_runs_of_calls_and_reported_per_call():
    counts = {"fast": 0, "slow": 0}

    def fast() -> None:
        counts["fast"] += 1

    def slow() -> None:  # slower than the sample: one call per sample
        counts["slow"] += 1
        total = 0
        for i in range(200_000):
            total += i

    times = best_of({"fast": fast, "slow": slow}, repeat=3, min_sample=0.001)
    assert counts["fast"] > 3 * 10  # runs of calls
    assert counts["slow"] == 1 + 1 + 3  # warm-up, calibration, one call per sample
    assert times["fast"] < times["slow"] / 10  # per call, not per run


def test_the_calibration_call_comes_after_the_warm_up_call():
    import time
    counts = {"n": 0}

    def compiles_on_its_first_call() -> None:
        counts["n"] += 1
        if counts["n"] == 1:
            time.sleep(0.01)  # longer than the sample: it must not set the run length

    best_of({"f": compiles_on_its_first_call}, repeat=2, min_sample=0.002)
    assert counts["n"] > 1 + 1 + 2 * 10


def test_without_a_sample_length_each_sample_is_one_call():
    counts = {"f": 0}

    def f() -> None:
        counts["f"] += 1

    best_of({"f": f}, repeat=4)
    assert counts["f"] == 1 + 4
