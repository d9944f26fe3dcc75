#!/usr/bin/env python3
"""Times ktune's stencil and pnpoly winners the way Kernel Tuner times a config, on this GPU.

Kernel Tuner cannot be installed on the device machine (no package registry), so this is its
timing method re-implemented with CuPy, as its CuPy backend does it (kernel_tuner/backends/cupy.py
and core.py's benchmark_default): the kernel source compiled by cupy.RawModule with
--std=c++11, --gpu-architecture=compute_XY and the config as -D defines, the entry found by its
C++ name, __constant__ data copied into the module (cmem_args); then 7 iterations of: synchronize,
record an event on a stream, launch once, record an event, wait, synchronize; no warm-up launch;
the time is the mean of the 7. Two differences from Kernel Tuner's own example scripts, printed
with the table: stencil.py passes a copy of the input as the output (here too, so its border holds
the input), and pnpoly.py tunes host code (lang="C": mapped host memory, slopes on the CPU, the
transfers timed), where this times the device kernel alone, as a tune_kernel of cn_pnpoly with
cmem_args would.

Rows per example: the configs ktune re-measured after its search (results.json's "remeasured",
winner first, with their re-measured medians) and the spec's default config (pnpoly's are
pnpoly.cu's own #ifndef defaults), with the median of its trial in trials.csv. With --all-stencil
(the default) every valid stencil config is timed too and the Kernel Tuner method's own winner
is shown. Each timed output is checked (stencil: the interior against a 5-point mean in f32;
pnpoly: flags against cn_pnpoly_naive, mismatches counted). Needs cupy and numpy.

    python3 bench/cuda/kt_examples_compare.py --stencil RUN_DIR --pnpoly RUN_DIR
"""
import argparse
import csv
import json
import math
import os
import time

import cupy as cp
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SPECS = os.path.join(HERE, "..", "..", "resources", "kernels", "cuda", "examples", "kernel_tuner")
TRIAL_COLUMNS = {"id", "problem", "status", "median_ns", "mean_ns", "std_ns", "min_ns", "max_ns", "count",
                 "compile_time_s", "tflops", "gbps", "max_abs_error", "mismatch_fraction", "started_at_s", "error",
                 "samples_ns", "metrics"}


def key_of(config):
    return tuple(sorted((k, str(int(v)) if isinstance(v, (bool, int)) else str(v)) for k, v in config.items()))


def load_run(run):
    """The run's problem fields, its re-measured configs [(config, median_ns)], and every trial
    {config key: (status, median_ns)}."""
    with open(os.path.join(run, "results.json")) as f:
        result = json.load(f)["results"][0]
    remeasured = [(m["config"], m["latency_median_ns"]) for m in result.get("remeasured", [])]
    if not remeasured:
        remeasured = [(result["config"], result["stats"]["latency_median_ns"])]
    trials = {}
    with open(os.path.join(run, "trials.csv")) as f:
        reader = csv.DictReader(f)
        params = [c for c in reader.fieldnames if c not in TRIAL_COLUMNS]
        for row in reader:
            config = {p: row[p] for p in params}
            median = float(row["median_ns"]) if row["median_ns"] else math.nan
            trials[key_of(config)] = (row["status"], median)
    return result["problem"]["fields"], remeasured, trials


class KernelTunerMethod:
    """One example's source and arguments on the device; times a config as Kernel Tuner does."""

    def __init__(self, source, entry, fixed_defines, args, constants, iterations):
        with open(source) as f:
            self.code = f.read()
        self.entry, self.fixed, self.args, self.constants = entry, fixed_defines, args, constants
        self.iterations = iterations
        cc = cp.cuda.Device().compute_capability
        self.options = ["--std=c++11", f"--gpu-architecture=compute_{cc}"]
        self.stream = cp.cuda.Stream()
        self.start, self.end = cp.cuda.Event(), cp.cuda.Event()

    def module(self, config, entry=None):
        defines = [f"-D{k}={v}" for k, v in {**self.fixed, **config}.items()]
        module = cp.RawModule(code=self.code, options=tuple(self.options + defines),
                              name_expressions=[entry or self.entry])
        for symbol, data in self.constants.items():
            target = module.get_global(symbol)
            cp.ndarray(data.shape, data.dtype, target)[:] = cp.asarray(data)
        return module

    def time_ms(self, config, grid, block):
        """Kernel Tuner's benchmark_default: the mean of `iterations` single launches."""
        func = self.module(config).get_function(self.entry)
        device = cp.cuda.Device()
        device.synchronize()
        times = []
        for _ in range(self.iterations):
            device.synchronize()
            self.start.record(self.stream)
            func(grid, block, self.args, stream=self.stream)
            self.end.record(self.stream)
            while not self.end.done:
                time.sleep(1e-6)
            device.synchronize()
            times.append(cp.cuda.get_elapsed_time(self.start, self.end))
        return sum(times) / len(times)


def ktune_number(config, remeasured, trials):
    for c, median in remeasured:
        if key_of(c) == key_of(config):
            return median / 1e3, "re-measured"
    status, median = trials.get(key_of(config), ("not tried", math.nan))
    return median / 1e3, status


def stencil(run, iterations, all_configs):
    spec = json.load(open(os.path.join(SPECS, "stencil.json")))
    fields, remeasured, trials = load_run(run)
    w, h = int(fields["domain_width"]), int(fields["domain_height"])
    x_old = cp.asarray(np.random.default_rng(1).standard_normal(w * h).astype(np.float32))
    x_new = x_old.copy()  # as stencil.py passes it: the border the kernel skips holds the input
    method = KernelTunerMethod(os.path.join(SPECS, spec["source"]), "stencil_kernel",
                               {"domain_width": w, "domain_height": h}, [x_new, x_old], {}, iterations)
    grid_of = lambda c: (math.ceil(w / c["block_size_x"]), math.ceil(h / c["block_size_y"]))
    block_of = lambda c: (c["block_size_x"], c["block_size_y"])
    o = x_old.reshape(h, w)
    want = (o[1:-1, :-2] + o[1:-1, 1:-1] + o[1:-1, 2:] + o[:-2, 1:-1] + o[2:, 1:-1]) / np.float32(5)

    def check():
        got = x_new.reshape(h, w)[1:-1, 1:-1]
        return "ok" if bool(cp.allclose(got, want, rtol=1e-5, atol=1e-6)) else "WRONG"

    rows = configs_of(remeasured, spec["default_config"])
    if all_configs:
        p = spec["space"]["parameters"]
        space = [{"block_size_x": x, "block_size_y": y} for x in p["block_size_x"] for y in p["block_size_y"]
                 if x * y <= 1024]  # the threads limit Kernel Tuner skips configs by
        timed = sorted((method.time_ms(c, grid_of(c), block_of(c)), i, c) for i, c in enumerate(space))
        best = timed[0][2]
        rank = next(r for r, (_, _, c) in enumerate(timed) if key_of(c) == key_of(remeasured[0][0]))
        print(f"stencil, Kernel Tuner's method over all {len(space)} valid configs: best {best} at "
              f"{timed[0][0] * 1e3:.1f} µs; ktune's winner ranks {rank + 1} at {timed[rank][0] * 1e3:.1f} µs")
        if key_of(best) not in {key_of(c) for _, c in rows}:
            rows.append(("KT-method best", best))
    return table("stencil", rows, remeasured, trials, method, grid_of, block_of, check)


def pnpoly(run, iterations):
    spec = json.load(open(os.path.join(SPECS, "pnpoly.json")))
    fields, remeasured, trials = load_run(run)
    n, vertices = int(fields["n"]), int(fields["vertices"])
    xy = np.load(os.path.join(SPECS, "vertices.npy")).astype(np.float32)
    slopes = np.load(os.path.join(SPECS, "slopes.npy")).astype(np.float32)
    if xy.size != 2 * vertices or slopes.size != vertices:
        raise SystemExit(f"vertices.npy / slopes.npy hold {xy.size // 2} / {slopes.size} vertices, the run {vertices}")
    lo, hi = next(a for a in spec["arguments"] if a["name"] == "points")["init"]["uniform"]
    points = cp.random.RandomState(1).uniform(lo, hi, 2 * n, dtype=cp.float32)
    bitmap = cp.zeros(n, dtype=cp.int32)
    args = [bitmap, points, np.int32(n)]
    method = KernelTunerMethod(os.path.join(SPECS, spec["source"]), "cn_pnpoly", {"VERTICES": vertices}, args,
                               {"d_vertices": xy.ravel(), "d_slopes": slopes}, iterations)
    naive = method.module(spec["default_config"], "cn_pnpoly_naive").get_function("cn_pnpoly_naive")
    want = cp.zeros(n, dtype=cp.int32)
    naive((math.ceil(n / 256),), (256,), [want, points, np.int32(n)])
    grid_of = lambda c: (math.ceil(n / (c["block_size_x"] * c["tile_size"])),)
    block_of = lambda c: (c["block_size_x"],)

    def check():
        wrong = int(cp.count_nonzero(bitmap != want))
        return "ok" if wrong == 0 else f"{wrong} of {n} differ ({wrong / n:.1e})"

    rows = configs_of(remeasured, spec["default_config"])
    return table("pnpoly", rows, remeasured, trials, method, grid_of, block_of, check)


def configs_of(remeasured, default):
    rows = [("ktune winner" if i == 0 else f"ktune #{i + 1}", c) for i, (c, _) in enumerate(remeasured)]
    if key_of(default) not in {key_of(c) for _, c in rows}:
        rows.append(("spec default", default))
    return rows


def table(example, rows, remeasured, trials, method, grid_of, block_of, check):
    out = []
    for label, config in rows:
        config = {k: int(v) for k, v in config.items()}
        kt_ms = method.time_ms(config, grid_of(config), block_of(config))
        ktune_us, how = ktune_number(config, remeasured, trials)
        out.append((example, label, config, ktune_us, how, kt_ms * 1e3, check()))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stencil", required=True, help="the ktune run folder of stencil.json")
    ap.add_argument("--pnpoly", required=True, help="the ktune run folder of pnpoly.json")
    ap.add_argument("--iterations", type=int, default=7, help="Kernel Tuner's default: 7")
    ap.add_argument("--no-all-stencil", dest="all_stencil", action="store_false",
                    help="time only the re-measured and default stencil configs")
    a = ap.parse_args()
    print(f"GPU: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, CuPy {cp.__version__}")
    print("Kernel Tuner's timing method re-implemented with CuPy (Kernel Tuner itself is not installed here): "
          f"RawModule with -D defines, {a.iterations} single launches between CUDA events, no warm-up, mean.")
    print("pnpoly: the device kernel alone (Kernel Tuner's pnpoly.py times its host code, transfers included); "
          "stencil: the output starts as a copy of the input, as in stencil.py.")
    rows = []
    for run, example in ((a.stencil, lambda: stencil(a.stencil, a.iterations, a.all_stencil)),
                         (a.pnpoly, lambda: pnpoly(a.pnpoly, a.iterations))):
        if os.path.exists(os.path.join(run, "results.json")):
            rows += example()
        else:
            print(f"{run}: no results.json (the run did not finish: cut by its timeout?), skipped")
    print("\n| example | config | | ktune median µs | KT-method mean µs | KT / ktune | output |")
    print("|---|---|---|---|---|---|---|")
    for example, label, config, ktune_us, how, kt_us, ok in rows:
        shown = " ".join(f"{k}={v}" for k, v in config.items())
        bound = "≥" if how == "slow_abort" else ""  # stopped early: its median is a lower bound
        ktune = f"{bound}{ktune_us:.1f} ({how})" if not math.isnan(ktune_us) else how
        ratio = f"{kt_us / ktune_us:.3f}" if not math.isnan(ktune_us) else "-"
        print(f"| {example} | {shown} | {label} | {ktune} | {kt_us:.1f} | {ratio} | {ok} |")


if __name__ == "__main__":
    main()
