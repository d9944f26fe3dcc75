#!/usr/bin/env python3
"""Compares two ktune runs of the same problems (e.g. `--isolate` against `--no-isolate`):
per problem, both winners and their medians, and whether the winners agree. Prints name=value
lines: same_winner_<key>=0|1, median_ratio_<key> = run A's best / run B's best, and each run's
median of the medians of the configs both measured ok (config_median_ratio_<key>), which says
whether the two ways of measuring time the same kernels alike, winner or not.

    python3 bench/cuda/compare_runs.py RUN_A RUN_B
"""
import csv
import json
import os
import statistics
import sys


def load(run):
    with open(os.path.join(run, "results.json")) as f:
        best = {r["key"]: r for r in json.load(f)["results"]}
    ok = {}
    with open(os.path.join(run, "trials.csv")) as f:
        reader = csv.DictReader(f)
        params = [c for c in reader.fieldnames if c not in (
            "id", "problem", "status", "median_ns", "mean_ns", "std_ns", "min_ns", "max_ns", "count", "compile_time_s",
            "tflops", "gbps", "max_abs_error", "mismatch_fraction", "started_at_s", "error", "samples_ns", "metrics")]
        for row in reader:
            if row["status"] == "ok":
                ok[(row["problem"], tuple(row[p] for p in params))] = float(row["median_ns"])
    return best, ok


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    (best_a, ok_a), (best_b, ok_b) = load(sys.argv[1]), load(sys.argv[2])
    for key in sorted(set(best_a) & set(best_b)):
        a, b = best_a[key], best_b[key]
        ma, mb = a["stats"]["latency_median_ns"], b["stats"]["latency_median_ns"]
        name = key.replace(",", "_").replace("=", "")
        print(f"winner_a_{name}={json.dumps(a['config'], sort_keys=True)} median_ns={ma:.0f}")
        print(f"winner_b_{name}={json.dumps(b['config'], sort_keys=True)} median_ns={mb:.0f}")
        print(f"same_winner_{name}={int(a['config'] == b['config'])}")
        print(f"median_ratio_{name}={ma / mb:.4f}")
        both = [ok_a[k] / ok_b[k] for k in ok_a if k[0] == key and k in ok_b]
        if both:
            print(f"config_median_ratio_{name}={statistics.median(both):.4f} (over {len(both)} configs ok in both)")


if __name__ == "__main__":
    main()
