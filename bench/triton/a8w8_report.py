#!/usr/bin/env python3
"""The winners of a ktune run of examples/workers/triton_a8w8_blockscale.py beside the torch baselines the
worker timed in the same process (trials.csv's metrics: scaled_mm_blockwise_us, scaled_mm_tensorwise_us,
int_mm_us, constant per problem), one row per problem, times in µs.

    python3 bench/triton/a8w8_report.py tuning_runs/<run> [--markdown]

The winner's time is the run's re-measured median (bench/ktune_results.py); "x blockwise" is the
blockwise baseline's time over it (> 1: the Triton kernel is faster), "-" where torch could not run it
(the worker's stderr in the run's log says why)."""
import argparse
import csv
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import ktune_results  # noqa: E402

KEY = ("M", "N", "K", "q_dtype", "out_dtype")  # the family's key fields, in its order
BASELINES = ("scaled_mm_blockwise_us", "scaled_mm_tensorwise_us", "int_mm_us")
PARAMS = ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "GROUP_SIZE_M", "num_warps", "num_stages", "NUM_KSPLIT", "cache_modifier")


def baselines(run_dir):
    """{problem key: {baseline: µs}} from the first trial of each problem that recorded them."""
    out = {}
    csv.field_size_limit(1 << 30)
    with open(os.path.join(run_dir, "trials.csv"), newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row.get("metrics") and row["problem"] not in out:
                m = json.loads(row["metrics"])
                if any(b in m for b in BASELINES):
                    out[row["problem"]] = {b: m[b] for b in BASELINES if b in m}
    return out


def _order(problem):
    """Problems by N, K, the dtypes, then M as a number (the table reads down M of one weight)."""
    fields = problem[0]
    return [str(fields.get(k, "")) for k in ("N", "K", "q_dtype", "out_dtype")] + [fields.get("M", 0)]


def rows(run_dir):
    w, base = ktune_results.winners(run_dir), baselines(run_dir)
    out = []
    for fields, (us, config) in sorted(((dict(shape), won) for shape, won in w.by_shape.items()), key=_order):
        key = ",".join(f"{k}={fields[k]}" for k in KEY if k in fields)
        b = base.get(key, {})
        tflops = 2 * fields["M"] * fields["N"] * fields["K"] / (us * 1e6)
        blockwise = b.get("scaled_mm_blockwise_us")
        out.append([key, f"{us:.1f}", f"{tflops:.0f}"] + [f"{b[n]:.1f}" if n in b else "-" for n in BASELINES] +
                   [f"{blockwise / us:.2f}" if blockwise else "-",
                    " ".join(f"{p}={config[p]!r}" if isinstance(config.get(p), str) else f"{p}={config.get(p)}"
                             for p in PARAMS)])
    return out


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", help="a ktune run folder of the worker")
    p.add_argument("--markdown", action="store_true", help="a markdown table")
    args = p.parse_args(argv)
    head = ["problem", "triton", "TFLOP/s", "blockwise", "per-tensor", "int_mm", "x blockwise", "config"]
    table = rows(args.run)
    if args.markdown:
        print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
        for r in table:
            print("| " + " | ".join(r) + " |")
    else:
        print("  ".join(head))
        for r in table:
            print("  ".join(r))


if __name__ == "__main__":
    main(sys.argv[1:])
