"""A ktune run's winners as the bench scripts compare them (bench/cuda/paged_report.py,
bench/triton/paged_compare.py): one reader of results.json, so every table quotes the same number,
the winner's median latency as the run re-measured it, the GPU's conditions (SM clock, power) during
that measurement where the run recorded them, and the workload its inputs were drawn from
(run_metadata.json): the workload seed and the version of ktune's workload rules
(core/include/ktune/workload_rules.h). A baseline set beside a run must have drawn the same: a page
table is generated from the seed and the problem's key, a MoE routing from the seed and its
experts, tokens and topk under rules 2 (under rules 1 from the seed and the whole key)."""
import json
import os
from collections import namedtuple

# method: the run's benchmarking_method ("amortized", "per_launch"); by_shape: {problem fields as a
# sorted tuple of (name, value): (median µs, config)}; seed: the workload seed and rules: the
# version of the workload rules (1 where the metadata predates the field; both None: a run folder
# without its run_metadata.json); conditions: {problem fields: the GPU's conditions during the measurement
# the winner was chosen by ({"sm_clock_mhz", "power_w", "clock_limited"}, each key absent where nothing
# could be read; {} for runs from before ktune recorded them)}, beside by_shape, whose (µs, config) pairs
# its callers unpack.
Winners = namedtuple("Winners", ["method", "by_shape", "seed", "rules", "conditions"])


def winners(run_dir):
    """The winners of the ktune run in `run_dir` (its results.json)."""
    with open(os.path.join(run_dir, "results.json"), encoding="utf-8") as f:
        d = json.load(f)
    by_shape, conditions = {}, {}
    for r in d["results"]:
        shape = tuple(sorted(r["problem"]["fields"].items()))
        by_shape[shape] = (r["stats"]["latency_median_ns"] / 1e3, r["config"])
        conditions[shape] = r.get("conditions", {})
    meta = os.path.join(run_dir, "run_metadata.json")
    seed = rules = None
    if os.path.exists(meta):
        with open(meta, encoding="utf-8") as f:
            m = json.load(f)
        seed, rules = m.get("seed"), m.get("workload_rules", 1)
    return Winners(d["benchmarking_method"], by_shape, seed, rules, conditions)


def workload(w):
    """The (workload seed, workload rules) of Winners `w`, as one_workload compares them; None where
    the run folder has no run_metadata.json."""
    return None if w.seed is None else (w.seed, w.rules)


def _one(values, what, differ, shown, fix):
    known = set(values.values())
    if len(known) == 1 and None not in known:
        return known.pop()
    listed = "\n".join(f"  {source}: {'unknown (no run_metadata.json)' if v is None else shown(v)}"
                       for source, v in values.items())
    raise SystemExit(f"{what}: {differ}:\n{listed}\n{fix}")


def one_seed(seeds, what):
    """The one workload seed of `seeds` ({source: seed}); exits naming each source's seed where they
    differ or one is unknown, as a table of different inputs side by side must not be printed."""
    return _one(seeds, what, "the workload seeds differ, so the inputs (a MoE routing, a page table) do too", str,
                "rerun them with one workload seed (ktune's --workload-seed)")


def one_workload(workloads, what):
    """The one (workload seed, workload rules) of `workloads` ({source: (seed, rules)}), for inputs
    whose rules changed (a MoE routing); exits naming each source's where they differ or one is
    unknown."""
    return _one(workloads, what, "the workloads differ (the seed, or the rules a MoE routing is drawn by)",
                lambda w: f"workload seed {w[0]}, workload rules {w[1]}",
                "rerun them with one workload seed (ktune's --workload-seed) and one ktune")
