"""A ktune run's winners as the bench scripts compare them (bench/cuda/paged_report.py,
bench/triton/paged_compare.py): one reader of results.json, so every table quotes the same number,
the winner's median latency as the run re-measured it."""
import json
import os
from collections import namedtuple

# method: the run's benchmarking_method ("amortized", "per_launch"); by_shape: {problem fields as a
# sorted tuple of (name, value): (median µs, config)}.
Winners = namedtuple("Winners", ["method", "by_shape"])


def winners(run_dir):
    """The winners of the ktune run in `run_dir` (its results.json)."""
    with open(os.path.join(run_dir, "results.json"), encoding="utf-8") as f:
        d = json.load(f)
    by_shape = {}
    for r in d["results"]:
        by_shape[tuple(sorted(r["problem"]["fields"].items()))] = (r["stats"]["latency_median_ns"] / 1e3, r["config"])
    return Winners(d["benchmarking_method"], by_shape)
