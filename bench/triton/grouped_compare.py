#!/usr/bin/env python3
"""The Triton grouped GEMM worker (examples/workers/triton_grouped_gemm.py) tuned on issue 24's
three shapes (bench/cuda/grouped_torch.py's SHAPES) in all three passes, each problem within a
search time budget, then per problem Unsloth's top-N table (bench/triton/grouped_top.py) and one
table side by side: the worker's winner (re-measured, results.json), its speedup over torch (the
faster of torch._grouped_mm and the per-expert torch.mm loop, timed by the worker in its process,
the same way), and the native CUDA family's winner on the same key where its runs are given
(gpu_run.sh's grouped stage, --native /tmp/grouped_runs).

    python3 bench/triton/grouped_compare.py --ktune build-gpu/app/cli/ktune [--seconds 30] \\
        [--native /tmp/grouped_runs] [--output-dir /tmp/grouped_triton] [--top 10]

--seconds is ktune's --time-budget per problem (a random search, seed 1); --workload-seed ktune's
(default 0, as bench/cuda/grouped_torch.py's and gpu_run.sh's grouped stage's: the native runs
given must have drawn the same routing, or the script stops saying so); start-up, the workload
(the routing is drawn in Python: about a second for 64 experts x 4096 tokens x 6), the f32
reference, torch's timing and the re-measure of the best few come on top: about 6 to 7 minutes
for the nine problems at 30 s. One ktune run per shape, named triton_<shape>."""
import argparse
import json
import os
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WORKER = os.path.join(ROOT, "examples", "workers", "triton_grouped_gemm.py")
sys.path.insert(0, os.path.join(ROOT, "bench", "cuda"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import grouped_top  # noqa: E402
import ktune_results  # noqa: E402

PASSES = ("fwd", "dX", "dW")


def shape_fields(name):
    import grouped_torch  # its SHAPES are issue 24's; it imports torch, which the device has
    experts, tokens, topk, hidden, inter = grouped_torch.SHAPES[name]
    return dict(experts=experts, tokens=tokens, topk=topk, hidden=hidden, intermediate=inter)


def tune(args, name, fields):
    """One ktune run of the worker over the shape's three passes; its folder (None when ktune failed)."""
    run = f"triton_{name}"
    shape = " ".join(f"{k}={v}" for k, v in fields.items()) + f" dtype={args.dtype} pass={','.join(PASSES)}"
    cmd = [args.ktune, "tune", "--worker", f"{shlex.quote(sys.executable)} {shlex.quote(WORKER)} {args.worker_flags}",
           "--shape", shape, "--method", args.method, "--strategy", "random", "--seed", "1",
           "--workload-seed", str(args.workload_seed),
           "--time-budget", f"{args.seconds}s", "--output-dir", args.output_dir, "--run-name", run, "-q"]
    t0 = time.monotonic()
    done = subprocess.run(cmd, timeout=len(PASSES) * (args.seconds + 60) + 60)
    print(f"{run}: exit {done.returncode} after {time.monotonic() - t0:.0f} s", flush=True)
    # Exit 1 is a finished run whose trials include failures (said above it): its winners stand.
    folder = os.path.join(args.output_dir, run)
    return folder if done.returncode in (0, 1) and os.path.exists(os.path.join(folder, "results.json")) else None


def native_winners(folder, seed):
    """shape -> re-measured µs of the grouped_gemm runs below `folder` (gpu_run.sh's grouped stage),
    each drawn from the workload `seed`."""
    import moe_routing  # the worker's routing, drawn by these rules
    out, seeds = {}, {"--workload-seed": (seed, moe_routing.WORKLOAD_RULES)}
    for entry in sorted(os.listdir(folder)) if folder and os.path.isdir(folder) else []:
        run = os.path.join(folder, entry)
        results = os.path.join(run, "results.json")
        if not os.path.exists(results):
            continue
        with open(results, encoding="utf-8") as f:
            family = json.load(f).get("family")
        if family != "grouped_gemm":  # the stage's read ceiling (grouped_read) has decode's keys too
            continue
        w = ktune_results.winners(run)
        out.update({shape: us for shape, (us, _) in w.by_shape.items()})
        seeds[run] = ktune_results.workload(w)
    ktune_results.one_workload(seeds, "the native runs and the worker's")
    return out


def side_by_side(runs, native):
    """One Markdown row per (shape, pass): the worker's winner and its torch times, the native winner."""
    print("| shape | pass | Triton µs | torch µs (faster) | torch._grouped_mm µs | per-expert mm µs | "
          "Triton speedup vs torch | native CUDA µs | native / Triton |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, run in runs:
        params, rows = grouped_top.read_trials(run)
        for shape, (us, config) in grouped_top.winners(run).items():
            wanted = {p: str(v).lower() if isinstance(v, bool) else str(v) for p, v in config.items()}
            trial = next((t for t in rows if grouped_top.shape_of(t["problem"]) == shape and t["status"] == "ok" and
                          all(t[p] == wanted[p] for p in params)), {"metrics": {}})
            m = trial["metrics"]
            cell = (lambda k: "%.1f" % m[k] if k in m else "-")
            base = native.get(shape)
            print("| %s | %s | %.1f | %s | %s | %s | %s | %s | %s |" % (
                name, dict(shape)["pass"], us, cell("torch_us"), cell("torch_grouped_mm_us"),
                cell("torch_mm_loop_us"), "%.3f" % (m["torch_us"] / us) if "torch_us" in m else "-",
                "%.1f" % base if base else "-", "%.3f" % (base / us) if base else "-"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ktune", required=True, help="the ktune CLI")
    ap.add_argument("--seconds", type=int, default=30, help="search time per problem (ktune's --time-budget)")
    ap.add_argument("--shapes", default="mixtral,deepseek,decode", help="of bench/cuda/grouped_torch.py's SHAPES")
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "f16"])
    ap.add_argument("--method", default="amortized", choices=["amortized", "per_launch"],
                    help="warm (amortized, the issue's numbers) or cold")
    ap.add_argument("--native", help="a folder of native grouped_gemm runs to set beside (gpu_run.sh grouped)")
    ap.add_argument("--output-dir", default="/tmp/grouped_triton")
    ap.add_argument("--top", type=int, default=10, help="configs a problem in the tables")
    ap.add_argument("--workload-seed", type=int, default=0,
                    help="ktune's --workload-seed (the routing): the native runs' and torch's")
    ap.add_argument("--worker-flags", default="", help="flags for the worker, e.g. '--use-tma-store 0'")
    args = ap.parse_args()
    native = native_winners(args.native, args.workload_seed)  # before the tunes: a mismatch costs no device time
    runs = []
    for name in args.shapes.split(","):
        run = tune(args, name, shape_fields(name))
        if run:
            runs.append((name, run))
    for _, run in runs:
        grouped_top.report(run, args.top, markdown=False)
    side_by_side(runs, native)
    if len(runs) < len(args.shapes.split(",")):
        sys.exit(1)


if __name__ == "__main__":
    main()
