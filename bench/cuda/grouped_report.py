#!/usr/bin/env python3
"""The grouped stage's table (bench/cuda/gpu_run.sh grouped): per problem of the native grouped_gemm
runs in FOLDER (g*), the winner's re-measured median beside the warm times of torch's two baselines
from FOLDER/torch.jsonl (bench/cuda/grouped_torch.py: same call, same routing), the speedup over
the faster one (the issue's goal; both timed after --settle-s of load, as the winners are), cuBLAS's grouped GEMM (cublasGemmGroupedBatchedEx) and the
native kernel's speedup over it, and, where FOLDER/read_decode (bench/cuda/grouped_read.json tuned on the same key)
has the problem, the read ceiling of the routed experts' weights and the fraction of it reached.
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
    they name, (seed, rules) (lines from before they did were drawn from seed 0, under rules 1))."""
    times, settle, seeds = {}, set(), set()
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                if r.get("mode") == "warm" and "median_us" in r:
                    times[(fields_of(r["key"]), r["baseline"])] = r["median_us"]
                    settle.add(r.get("settle_s"))
                    seeds.add((r.get("seed", 0), r.get("workload_rules", 1)))
    return times, (settle.pop() if len(settle) == 1 else None), seeds


def main(folder):
    native, seeds = {}, {}
    for run in sorted(glob.glob(os.path.join(folder, "g*"))):
        if os.path.exists(os.path.join(run, "results.json")):
            w = ktune_results.winners(run)
            native.update(w.by_shape)
            seeds[run] = ktune_results.workload(w)
    read_dir = os.path.join(folder, "read_decode")
    ceiling = {}
    if os.path.exists(os.path.join(read_dir, "results.json")):
        w = ktune_results.winners(read_dir)
        ceiling, seeds[read_dir] = w.by_shape, ktune_results.workload(w)
    torch, settle, torch_seeds = torch_times(os.path.join(folder, "torch.jsonl"))
    for s in torch_seeds:
        seeds[f"torch.jsonl ({s[0]}, {s[1]})" if len(torch_seeds) > 1 else "torch.jsonl"] = s
    ktune_results.one_workload(seeds, folder)
    print("| problem | native µs | torch._grouped_mm µs | per-expert mm µs | speedup | cuBLAS grouped µs "
          "| x cuBLAS grouped | weights' read ceiling µs | % of ceiling | config |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for fields, (us, config) in native.items():
        grouped, loop = torch.get((fields, "torch._grouped_mm")), torch.get((fields, "per-expert torch.mm"))
        cublas = torch.get((fields, "cuBLAS grouped"))
        faster = min((t for t in (grouped, loop) if t), default=None)
        read = ceiling.get(fields)
        cells = [shown(fields), f"{us:.1f}", f"{grouped:.1f}" if grouped else "-", f"{loop:.1f}" if loop else "-",
                 f"{faster / us:.3f}" if faster else "-", f"{cublas:.1f}" if cublas else "-",
                 f"{cublas / us:.3f}" if cublas else "-", f"{read[0]:.1f}" if read else "-",
                 f"{100 * read[0] / us:.1f} %" if read else "-", " ".join(f"{k}={v}" for k, v in config.items())]
        print("| " + " | ".join(cells) + " |")
    if settle is not None:
        print(f"\ntorch's and cuBLAS's warm medians were taken after {settle:g} s of back-to-back calls each "
              "(grouped_torch.py --settle-s), at the clocks a sustained load holds, as the native winners' "
              "re-measures are.")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
