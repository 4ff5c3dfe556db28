"""bench/paired_timing.py's ratios: the median of per-repetition ratios, which a drift that moves both
contenders alike leaves unchanged (a ratio of whole medians does not), and its interquartile range."""

from __future__ import annotations



import paired_timing  # noqa: E402


def test_a_shared_drift_cancels_in_per_repetition_ratios():
    drift = [1.0 + 0.2 * (i % 7) for i in range(21)]  # the clock moves both alike
    times = {"ours": [0.5 * d for d in drift], "theirs": [0.51 * d for d in drift]}
    times["ours"][3] *= 3  # one outlier repetition
    assert abs(paired_timing.ratio(times, "theirs", "ours") - 1.02) < 1e-9
    low, high = paired_timing.spread(times, "theirs", "ours")
    assert low <= 1.02 <= high
