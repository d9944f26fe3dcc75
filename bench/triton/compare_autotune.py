#!/usr/bin/env python3
"""ktune (through examples/workers/triton_matmul.py) against triton.autotune, over the same 72
configs on the same shapes, in one run on one GPU. Prints name=value lines:

  autotune_{cold,warm}_s_<shape>, ktune_{cold,warm}_s_<shape>: wall time to tune one shape
  wall_ratio_{cold,warm}_<shape> = autotune / ktune          (goal >= 3)
  winner_ratio_<shape> = ktune winner / autotune winner, both re-timed here with do_bench in
                         alternation (goal <= 1.02)

Cold = an empty Triton cache directory (every config compiles), warm = the same directory again
in a new process. Each side runs in its own process; a side's per-shape time is the time of the
first call on that shape (autotune) or from ktune's "problem" line to its "best" line; start-up
(Python, torch and Triton imports, CUDA context, the worker's hello) is in neither, and is in
the process times printed beside them (autotune_*_process_s, ktune_*_process_s).

    python3 bench/triton/compare_autotune.py --ktune build/app/cli/ktune [--shapes 16x4096x4096,...]
"""
import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WORKER = os.path.join(ROOT, "examples", "workers", "triton_matmul.py")


def load_worker():
    sys.path.insert(0, os.path.dirname(WORKER))
    import triton_matmul  # noqa: E402 (not __main__: defines the kernel and CONFIGS, serves nothing)
    return triton_matmul


def shape_name(s):
    return "x".join(map(str, s))


def autotune_child(shapes):
    """In a fresh process: triton.autotune over CONFIGS, the first call per shape timed."""
    import torch
    import triton
    tm = load_worker()
    configs = [triton.Config({k: v for k, v in c.items() if k not in ("num_warps", "num_stages")},
                             num_warps=c["num_warps"], num_stages=c["num_stages"]) for c in tm.CONFIGS]
    tuned = triton.autotune(configs=configs, key=["M", "N", "K"])(tm.matmul_kernel)
    out = {}
    for M, N, K in shapes:
        a = torch.randn((M, K), device="cuda", dtype=torch.float16)
        b = torch.randn((K, N), device="cuda", dtype=torch.float16)
        c = torch.empty((M, N), device="cuda", dtype=torch.float16)
        grid = lambda meta: (triton.cdiv(M, meta["BLOCK_SIZE_M"]) * triton.cdiv(N, meta["BLOCK_SIZE_N"]),)  # noqa: E731
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        tuned[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
        torch.cuda.synchronize()
        best = tuned.best_config
        cfg = dict(best.kwargs, num_warps=best.num_warps, num_stages=best.num_stages)
        out[shape_name((M, N, K))] = {"s": time.perf_counter() - t0, "config": cfg}
    print(json.dumps(out))


def retime_child(winners, reps):
    """In a fresh process: each shape's winners ({label: config}) timed with do_bench in alternation."""
    import torch
    import triton
    tm = load_worker()
    out = {}
    for name, configs in winners.items():
        M, N, K = map(int, name.split("x"))
        a = torch.randn((M, K), device="cuda", dtype=torch.float16)
        b = torch.randn((K, N), device="cuda", dtype=torch.float16)
        c = torch.empty((M, N), device="cuda", dtype=torch.float16)
        times = {label: [] for label in configs}
        for _ in range(reps):
            for label, cfg in configs.items():
                times[label].append(triton.testing.do_bench(lambda: tm.launch(cfg, a, b, c)))
        out[name] = {label: sorted(v)[len(v) // 2] for label, v in times.items()}
    print(json.dumps(out))


def child(args, env):
    r = subprocess.run([sys.executable, __file__] + args, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(args[:1])} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def run_ktune(ktune, shapes, cache, out_dir, name, extra):
    """Runs ktune on every shape in one process; a shape's time runs from its "problem i:" line to
    its "best" line (progress on stderr, flushed at each event), so the worker's start-up is in
    the process time only."""
    os.makedirs(out_dir, exist_ok=True)
    env = dict(os.environ, TRITON_CACHE_DIR=cache, KTUNE_TRITON_TRACE=os.path.join(out_dir, name + ".trace"))
    if len({s[1:] for s in shapes}) != 1:
        sys.exit("--shapes must share N and K (one --shape with an M list)")
    N, K = shapes[0][1:]
    ms = ",".join(str(s[0]) for s in shapes)
    cmd = [ktune, "tune", "--worker", f"{sys.executable} {WORKER}", "--shape", f"M={ms} N={N} K={K}",
           "--output-dir", out_dir, "--run-name", name] + extra
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out:  # the results table; progress comes on stderr
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.PIPE, text=True)
        # (a progress bar, on a terminal only, would put "\r\033[K" before a line)
        lines = [(time.perf_counter() - t0, line.rstrip("\n").split("\r")[-1].replace("\033[K", ""))
                 for line in proc.stderr]
        wall = time.perf_counter() - t0
        if proc.wait() != 0:
            out.seek(0)
            sys.exit(f"ktune failed ({proc.returncode}):\n" + out.read()[-2000:] + "\n".join(l for _, l in lines[-40:]))
    run = os.path.join(out_dir, name)
    with open(os.path.join(run, "results.json")) as f:
        results = json.load(f)
    with open(os.path.join(run, "run_metadata.json")) as f:
        meta = json.load(f)
    # String parameters are recorded as their index into the candidate list; the parameter's
    # description says which is which ("0=, 1=.cg").
    strings = {p["name"]: dict(item.partition("=")[::2] for item in p["description"].split(", "))
               for p in meta["space"]["parameters"] if p.get("description")}
    winners = {}
    for res in results["results"]:
        p = res["problem"]["fields"]
        cfg = {k: (strings[k][str(v)] if k in strings else v) for k, v in res["config"].items()}
        winners[shape_name((p["M"], p["N"], p["K"]))] = cfg
    statuses = {}
    with open(os.path.join(run, "trials.csv")) as f:
        for row in csv.DictReader(f):
            statuses[row["status"]] = statuses.get(row["status"], 0) + 1
    per, started, first = {}, None, None
    for t, line in lines:
        if line.startswith("problem ") and ": M=" in line:
            fields = dict(kv.split("=") for kv in line.split(": ", 1)[1].split()[0].split(","))
            started = (shape_name((int(fields["M"]), int(fields["N"]), int(fields["K"]))), t)
            first = t if first is None else first
        elif started and (line.startswith("  best ") or line.startswith("  no config")):
            per[started[0]] = t - started[1]
            started = None
    return {"wall": wall, "startup": first or 0.0, "per_shape": per, "winners": winners, "statuses": statuses}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ktune", default=os.path.join(ROOT, "build", "app", "cli", "ktune"))
    ap.add_argument("--shapes", default="16x4096x4096,1024x4096x4096,4096x4096x4096")
    ap.add_argument("--reps", type=int, default=7, help="do_bench alternations when re-timing the winners")
    ap.add_argument("--keep", help="keep the ktune runs and Triton caches in this folder")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=ARGS",
                    help="also run ktune with these extra tune arguments (e.g. 'w5=--warmup-ms,5'); its lines "
                         "are named ktune_NAME_..., wall_ratio_NAME_..., winner_ratio_NAME_...")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--payload", help=argparse.SUPPRESS)
    a = ap.parse_args()
    shapes = [tuple(int(x) for x in s.split("x")) for s in a.shapes.split(",")]
    if a.child == "autotune":
        return autotune_child(shapes)
    if a.child == "retime":
        return retime_child(json.loads(a.payload), a.reps)

    variants = {"": []}  # "": ktune's defaults
    for v in a.variant:
        name, _, args = v.partition("=")
        variants[name + "_"] = args.replace(",", " ").split()  # commas too: one shell word
    work = a.keep or tempfile.mkdtemp(prefix="ktune_triton_")
    os.makedirs(work, exist_ok=True)
    auto = {}
    kt = {v: {} for v in variants}
    caches = {v: os.path.join(work, f"cache_ktune_{v}") for v in variants}
    caches["autotune"] = os.path.join(work, "cache_autotune")
    for d in caches.values():
        shutil.rmtree(d, ignore_errors=True)
    for temp in ("cold", "warm"):
        t0 = time.perf_counter()
        auto[temp] = child(["--child", "autotune", "--shapes", a.shapes],
                           dict(os.environ, TRITON_CACHE_DIR=caches["autotune"]))
        print(f"autotune_{temp}_process_s={time.perf_counter() - t0:.2f}", flush=True)
        for v, args in variants.items():
            r = kt[v][temp] = run_ktune(a.ktune, shapes, caches[v], os.path.join(work, "runs"), f"triton_{v}{temp}", args)
            print(f"ktune_{v}{temp}_process_s={r['wall']:.2f}", flush=True)
            print(f"ktune_{v}{temp}_startup_s={r['startup']:.2f}", flush=True)
            print(f"ktune_{v}{temp}_statuses={json.dumps(r['statuses'], sort_keys=True)}", flush=True)
    winners = {shape_name(s): dict({"autotune": auto["warm"][shape_name(s)]["config"]},
                                   **{v: kt[v]["warm"]["winners"][shape_name(s)] for v in variants}) for s in shapes}
    times = child(["--child", "retime", "--payload", json.dumps(winners), "--reps", str(a.reps)], dict(os.environ))
    for s in shapes:
        n = shape_name(s)
        print(f"autotune_winner_{n}={json.dumps(winners[n]['autotune'], sort_keys=True)}")
        print(f"autotune_winner_ms_{n}={times[n]['autotune']:.5f}")
        for temp in ("cold", "warm"):
            print(f"autotune_{temp}_s_{n}={auto[temp][n]['s']:.2f}")
        for v in variants:
            for temp in ("cold", "warm"):
                kts = kt[v][temp]["per_shape"][n]
                print(f"ktune_{v}{temp}_s_{n}={kts:.2f}")
                print(f"wall_ratio_{v}{temp}_{n}={auto[temp][n]['s'] / kts:.2f}")
            print(f"ktune_{v}winner_{n}={json.dumps(winners[n][v], sort_keys=True)}")
            print(f"ktune_{v}winner_ms_{n}={times[n][v]:.5f}")
            print(f"winner_ratio_{v}{n}={times[n][v] / times[n]['autotune']:.4f}")
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
