#!/usr/bin/env python3
"""GPU check of examples/workers/triton_grouped_gemm.py, without ktune: configs that give every
parameter each value the device allows (all three passes; with --quick one covering set, else also
--sample random ones), on small shapes with hot and empty experts, blocks larger than an expert's
rows and sizes no block divides, validated against the worker's reference with ktune's default
tolerance; then the controls that show a pass means something and that the timed path works:
  - the default config given the routing reversed (a permutation of the rows, each row under the
    wrong expert; skipped where every routed row is under one expert, as no permutation is wrong
    then) FAILS validation, and so does one given each expert the next expert's weights (fwd, dX);
  - per pass, a config replayed from a CUDA graph of two launches (ktune's amortized timing) still
    validates, and the worker's speedup_vs_torch metric comes out a positive number.
Prints one line per check and ends with 'N passed, M failed' (exit 1 on a failure).

    python3 bench/triton/grouped_check.py [--quick] [--sample 40]
"""
import argparse
import os
import random
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "examples", "workers"))
import triton_grouped_gemm as gg  # noqa: E402

SHAPES = [  # (fields, why)
    (dict(experts=8, tokens=100, topk=2, hidden=136, intermediate=200, dtype="bf16"), "sizes no block divides"),
    (dict(experts=64, tokens=40, topk=6, hidden=256, intermediate=96, dtype="f16"), "64 experts, empty ones, f16"),
    (dict(experts=4, tokens=3, topk=1, hidden=64, intermediate=64, dtype="bf16"), "fewer rows than any block"),
]
TOLERANCE = gg.kw.Tolerance()  # ktune's default --atol, --rtol, --max-mismatch


def covering(every, quick, sample, rng):
    """Configs that give every parameter each of its values at least once, plus `sample` random others."""
    picked, seen = [], set()
    for c in every:
        new = set(c.items()) - seen
        if new:
            picked.append(c)
            seen |= new
    rest = [c for c in every if c not in picked]
    return picked + ([] if quick else rng.sample(rest, min(sample, len(rest))))


def check(name, ok, detail, tally):
    tally[ok] += 1
    print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)


def validate(launch, ref):
    err, frac = gg.compare(launch(), ref, TOLERANCE)
    return frac <= TOLERANCE.max_mismatch_fraction, f"max abs error {err:.3g}, {frac * 100:.3g}% outside"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the covering configs only")
    ap.add_argument("--sample", type=int, default=40, help="random configs a shape and pass beside the covering ones")
    args = ap.parse_args()
    rng = random.Random(1)
    tally = {True: 0, False: 0}
    props = gg.device(torch.cuda.current_device())["properties"]
    print(f"device properties: tma={props['tma']:.0f} smem_per_block={props['smem_per_block']:.0f}", flush=True)
    for fields, why in SHAPES:
        for pass_ in ("fwd", "dX", "dW"):
            problem = {**fields, "pass": pass_}
            x = gg.inputs(problem, 0)
            ref = gg.reference(problem, x)
            for c in covering(gg.configs(gg.SPACE, problem, props), args.quick, args.sample, rng):
                name = f"{pass_} {why} " + " ".join(f"{k}={int(v) if isinstance(v, bool) else v}" for k, v in c.items())
                try:
                    check(name, *validate(gg.build(c, problem, x), ref), tally)
                except Exception as e:  # a compile or launch error is this config's failure, not the script's
                    check(name, False, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", tally)
            controls(problem, x, ref, why, tally)
    print(f"{tally[True]} passed, {tally[False]} failed")
    sys.exit(0 if tally[False] == 0 else 1)


def controls(problem, x, ref, why, tally):
    """Wrong routings fail; a graph replay validates; the speedup metric is a number."""
    default = {k: v[0] for k, v in gg.SPACE.items()}
    offsets = x["offsets_list"]
    if sum(b > a for a, b in zip(offsets[:-1], offsets[1:])) >= 2:
        wrong = dict(x, rows=x["rows"].flip(0), rows_long=x["rows_long"].flip(0), toks=x["toks"].flip(0))
        ok, detail = validate(gg.build(default, problem, wrong), ref)
        check(f"{problem['pass']} {why}: the reversed routing is caught", not ok, detail, tally)
    else:  # rows reordered under one expert are still right: no permutation makes a wrong routing
        print(f"SKIP {problem['pass']} {why}: the reversed routing (every routed row is under one expert)", flush=True)
    if "w" in x:  # each expert's rows multiplied by the next expert's weights
        ok, detail = validate(gg.build(default, problem, dict(x, w=x["w"].roll(1, 0))), ref)
        check(f"{problem['pass']} {why}: weights of the wrong experts are caught", not ok, detail, tally)
    launch = gg.build(default, problem, x)
    timer = gg.GraphTimer()
    timer(launch, 2)  # runs it once, captures the graph and replays it
    launch.buffers["out"].fill_(float("nan"))
    ns = timer(launch, 2)  # a replay alone writes the output now
    err, frac = gg.compare(launch.buffers["out"], ref, TOLERANCE)
    check(f"{problem['pass']} {why}: valid after a graph replay ({ns / 1e3:.1f} µs a launch)",
          frac <= TOLERANCE.max_mismatch_fraction, f"max abs error {err:.3g}, {frac * 100:.3g}% outside", tally)
    settings = {"method": "amortized", "min_sample_ms": 0.5, "min_samples": 3, "max_samples": 5}
    m = gg.speedup_metrics(problem, x, [ns] * 3, settings, timer)
    check(f"{problem['pass']} {why}: speedup_vs_torch", m.get("speedup_vs_torch", 0) > 0, str(m), tally)


if __name__ == "__main__":
    main()
