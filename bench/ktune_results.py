"""A ktune run's winners as the bench scripts compare them (bench/cuda/paged_report.py,
bench/triton/paged_compare.py): one reader of results.json, so every table quotes the same number,
the winner's median latency as the run re-measured it, and the workload seed its inputs were
drawn from (run_metadata.json): a baseline set beside it must have drawn the same (a MoE routing
is generated from that seed and its experts, tokens and topk, a page table from that seed and the
problem's key)."""
import json
import os
from collections import namedtuple

# method: the run's benchmarking_method ("amortized", "per_launch"); by_shape: {problem fields as a
# sorted tuple of (name, value): (median µs, config)}; seed: the workload seed (None: a run folder
# without its run_metadata.json).
Winners = namedtuple("Winners", ["method", "by_shape", "seed"])


def winners(run_dir):
    """The winners of the ktune run in `run_dir` (its results.json)."""
    with open(os.path.join(run_dir, "results.json"), encoding="utf-8") as f:
        d = json.load(f)
    by_shape = {}
    for r in d["results"]:
        by_shape[tuple(sorted(r["problem"]["fields"].items()))] = (r["stats"]["latency_median_ns"] / 1e3, r["config"])
    meta = os.path.join(run_dir, "run_metadata.json")
    seed = None
    if os.path.exists(meta):
        with open(meta, encoding="utf-8") as f:
            seed = json.load(f).get("seed")
    return Winners(d["benchmarking_method"], by_shape, seed)


def one_seed(seeds, what):
    """The one workload seed of `seeds` ({source: seed}); exits naming each source's seed where they
    differ or one is unknown, as a table of different inputs side by side must not be printed."""
    known = set(seeds.values())
    if len(known) == 1 and None not in known:
        return known.pop()
    listed = "\n".join(f"  {source}: {'unknown (no run_metadata.json)' if s is None else s}" for source, s in seeds.items())
    raise SystemExit(f"{what}: the workload seeds differ, so the inputs (a MoE routing, a page table) do too:\n{listed}\n"
                     "rerun them with one workload seed (ktune's --workload-seed)")
