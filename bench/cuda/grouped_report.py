#!/usr/bin/env python3
"""The grouped stage's table (bench/cuda/gpu_run.sh grouped): per problem of the native grouped_gemm
runs in FOLDER (g*), the winner's re-measured median beside the warm times of torch's two baselines
from FOLDER/torch.jsonl (bench/cuda/grouped_torch.py: same call, same routing), the speedup over
the faster one (the issue's goal; both timed after --settle-s of load, as the winners are), cuBLAS's grouped GEMM (cublasGemmGroupedBatchedEx) and the
native kernel's speedup over it, and, where FOLDER/read_decode (bench/cuda/grouped_read.json tuned on the same key)
has the problem, the read ceiling of the routed experts' weights and the fraction of it reached, then the
SM clock and board power the native winner and the faster torch baseline were timed at (ktune's
"conditions" in results.json, grouped_torch.py's on its lines; "-" for runs from before either recorded
them), and below the table each problem whose two clocks differ by more than 3 %: an H100 at its power
cap runs 1,400-1,600 MHz rather than 1,980, and a speedup moves with the clock as much as with the kernels.
Every run and torch's lines must have drawn their inputs from one workload seed: the routing, and at
decode which experts are read, follows from it, so the script stops naming the seeds otherwise.
Markdown on stdout; winners through bench/ktune_results.py, as the other bench tables.

    python3 bench/cuda/grouped_report.py /tmp/grouped_runs
"""
import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import ktune_results  # noqa: E402


def fields_of(key):
    """ktune's problem key ("experts=8,...,pass=fwd") as results.json's fields: numbers as ints."""
    pairs = (part.split("=", 1) for part in key.split(","))
    return tuple(sorted((k, int(v) if v.lstrip("-").isdigit() else v) for k, v in pairs))


def shown(fields):
    return ",".join(f"{k}={v}" for k, v in fields)


def torch_times(path):
    """({(fields, baseline): warm median µs} of grouped_torch.py's lines, the seconds of load each
    baseline ran before it was timed (--settle-s; None: lines from before it said so), the workloads
    they name, (seed, rules) (lines from before they did were drawn from seed 0, under rules 1), and
    {(fields, baseline): the GPU's conditions during the warm timing} ({} where a line has none))."""
    times, settle, seeds, conditions = {}, set(), set(), {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                if r.get("mode") == "warm" and "median_us" in r:
                    times[(fields_of(r["key"]), r["baseline"])] = r["median_us"]
                    conditions[(fields_of(r["key"]), r["baseline"])] = r.get("conditions", {})
                    settle.add(r.get("settle_s"))
                    seeds.add((r.get("seed", 0), r.get("workload_rules", 1)))
    return times, (settle.pop() if len(settle) == 1 else None), seeds, conditions


def clock(conditions):
    """A conditions dict as a cell: "1,425 MHz, 690 W", what of it was read, or "-"."""
    parts = []
    if "sm_clock_mhz" in conditions:
        parts.append(f"{conditions['sm_clock_mhz']:,.0f} MHz")
    if "power_w" in conditions:
        parts.append(f"{conditions['power_w']:,.0f} W")
    return ", ".join(parts) or "-"


def clock_note(fields, native, faster_name, torch):
    """The line said below the table where the native winner and the faster baseline were timed at SM
    clocks more than 3 % apart (None otherwise, or where either clock is unknown)."""
    n, t = native.get("sm_clock_mhz"), torch.get("sm_clock_mhz")
    if not n or not t or max(n, t) / min(n, t) <= 1.03:
        return None
    return (f"{shown(fields)}: the native winner was timed at {n:,.0f} MHz, {faster_name} at {t:,.0f} MHz "
            f"({100 * (t / n - 1):+.1f} %): the speedup carries that clock difference, not only the kernels'.")


def main(folder):
    native, native_conditions, seeds = {}, {}, {}
    for run in sorted(glob.glob(os.path.join(folder, "g*"))):
        if os.path.exists(os.path.join(run, "results.json")):
            w = ktune_results.winners(run)
            native.update(w.by_shape)
            native_conditions.update(w.conditions)
            seeds[run] = ktune_results.workload(w)
    read_dir = os.path.join(folder, "read_decode")
    ceiling = {}
    if os.path.exists(os.path.join(read_dir, "results.json")):
        w = ktune_results.winners(read_dir)
        ceiling, seeds[read_dir] = w.by_shape, ktune_results.workload(w)
    torch, settle, torch_seeds, torch_conditions = torch_times(os.path.join(folder, "torch.jsonl"))
    for s in torch_seeds:
        seeds[f"torch.jsonl ({s[0]}, {s[1]})" if len(torch_seeds) > 1 else "torch.jsonl"] = s
    ktune_results.one_workload(seeds, folder)
    print("| problem | native µs | torch._grouped_mm µs | per-expert mm µs | speedup | cuBLAS grouped µs "
          "| x cuBLAS grouped | weights' read ceiling µs | % of ceiling | native MHz | torch MHz | config |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    notes = []
    for fields, (us, config) in native.items():
        grouped, loop = torch.get((fields, "torch._grouped_mm")), torch.get((fields, "per-expert torch.mm"))
        cublas = torch.get((fields, "cuBLAS grouped"))
        faster, faster_name = min(((t, name) for t, name in ((grouped, "torch._grouped_mm"),
                                                             (loop, "per-expert torch.mm")) if t), default=(None, None))
        read = ceiling.get(fields)
        mine, theirs = native_conditions.get(fields, {}), torch_conditions.get((fields, faster_name), {})
        cells = [shown(fields), f"{us:.1f}", f"{grouped:.1f}" if grouped else "-", f"{loop:.1f}" if loop else "-",
                 f"{faster / us:.3f}" if faster else "-", f"{cublas:.1f}" if cublas else "-",
                 f"{cublas / us:.3f}" if cublas else "-", f"{read[0]:.1f}" if read else "-",
                 f"{100 * read[0] / us:.1f} %" if read else "-", clock(mine), clock(theirs),
                 " ".join(f"{k}={v}" for k, v in config.items())]
        print("| " + " | ".join(cells) + " |")
        note = clock_note(fields, mine, faster_name, theirs)
        if note:
            notes.append(note)
    if notes:
        print("\n" + "\n".join(notes))
    if settle is not None:
        print(f"\ntorch's and cuBLAS's warm medians were taken after {settle:g} s of back-to-back calls each "
              "(grouped_torch.py --settle-s), at the clocks a sustained load holds, as the native winners' "
              "re-measures are.")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
