#!/usr/bin/env python3
"""The baselines of the CUDA grouped_gemm family, timed in the same device call as its tune:
torch._grouped_mm (one grouped call; CUTLASS underneath), a loop of per-expert torch.mm
(cuBLAS) and cuBLAS's own grouped GEMM (cublasGemmGroupedBatchedEx, bench/cuda/cublas_grouped.py:
checked against the loop's output before it is timed), for Unsloth's three passes, on exactly the routing a ktune run of the same shape makes
(bench/cuda/moe_routing.py: the spec's "route" argument, one for the three passes, from the shape's
experts, tokens and topk and the workload --seed, default 0 as ktune's --workload-seed; the routing
depends on it, at decode even which experts are read: 6 of 8 at seed 0, 7 at seed 1 and 8 at seed 2,
so a run of another seed is a different workload, which grouped_report.py refuses):
  fwd  y_e  = x_e w_e^T     (x rows gathered into expert order first: the unfused input)
  dX   dx_e = dy_e w_e
  dW   dw_e = dy_e^T x_e    (groups along the token dimension)
Operands are in expert order (the permutations are not timed: both baselines get them for free,
which favours them). Timed with CUDA events, median of --samples: warm (20 calls back to back,
averaged, as ktune's amortized method, after --settle-s of the same calls) and cold (a 512 MiB write before each call evicts L2).
Prints one JSON line per (shape, pass, mode, baseline): {"key", "pass", "mode", "baseline",
"median_us", "tflops", "settle_s", "seed", "workload_rules", "conditions"}, "conditions" the GPU's during
the timed samples (python/ktune_worker/gpu_conditions.py: {"sm_clock_mhz", "power_w", "clock_limited"}, NVML's
median SM clock and board power and the fraction of readings a power or thermal limit held the clock
down in, as ktune records beside its winners; a key NVML could not read is absent, and "conditions" too
where there is no NVML: the reason goes to stderr once). A baseline that could not run prints
{"key", "pass", ["mode",] "baseline", "error"} instead."""
import argparse
import json
import sys
import os

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# the repo's python/: the NVML reader is ktune_worker's, which Python workers read conditions with too
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "python"))
import cublas_grouped  # noqa: E402
from ktune_worker import gpu_conditions  # noqa: E402
import moe_routing  # noqa: E402
from torch_settle import settle  # noqa: E402
from sdpa_decode import time_us  # noqa: E402  (the CUDA-event timer both baselines use)

SHAPES = {  # experts, tokens, topk, hidden, intermediate (issue 24's three)
    "mixtral": (8, 4096, 2, 4096, 14336),
    "deepseek": (64, 4096, 6, 2048, 1408),
    "decode": (8, 16, 2, 4096, 14336),
}


def operands(E, T, k, H, I, dtype):
    """Random expert-ordered xs [R, H], w [E, I, H] and dys [R, I], R = T * k."""
    R = T * k
    dev = "cuda"
    xs = torch.empty(R, H, device=dev, dtype=dtype).uniform_(-1, 1)
    w = torch.empty(E, I, H, device=dev, dtype=dtype).uniform_(-1, 1)
    dys = torch.empty(R, I, device=dev, dtype=dtype).uniform_(-1, 1)
    return xs, w, dys


def baseline(pass_, xs, w, dys, offsets):
    """(the grouped call, the per-expert loop) of one pass over expert-ordered xs [R, H], w [E, I, H] and
    dys [R, I] (a pass reads two of them: the third may be None), offsets the experts' first rows and
    the end (E + 1). examples/workers/triton_grouped_gemm.py times its speedup against these."""
    device = (dys if xs is None else xs).device
    offs = torch.tensor(offsets[1:], device=device, dtype=torch.int32)  # ends of each group
    bounds = list(zip(offsets[:-1], offsets[1:]))

    def loop(f, out, absent=None):
        def run():
            for e, (a, b) in enumerate(bounds):
                if b > a:
                    f(e, a, b)
                elif absent:
                    absent(e)
        run.out = out  # what it computes, for cublas_checked
        return run

    if pass_ == "fwd":
        out = torch.empty(xs.shape[0], w.shape[1], device=xs.device, dtype=xs.dtype)
        wt = w.transpose(1, 2)  # [E, H, I]: x_e @ w_e^T
        return (lambda: torch._grouped_mm(xs, wt, offs=offs),
                loop(lambda e, a, b: torch.mm(xs[a:b], w[e].t(), out=out[a:b]), out))
    if pass_ == "dX":
        out = torch.empty(dys.shape[0], w.shape[2], device=dys.device, dtype=dys.dtype)
        return (lambda: torch._grouped_mm(dys, w, offs=offs),
                loop(lambda e, a, b: torch.mm(dys[a:b], w[e], out=out[a:b]), out))
    out = torch.empty(len(bounds), dys.shape[1], xs.shape[1], device=xs.device, dtype=xs.dtype)
    # An expert without rows has a zero gradient, which the kernel and _grouped_mm write: so does the
    # loop, in its time (at decode, 2 of 8 experts: a quarter of dW's writes).
    return (lambda: torch._grouped_mm(dys.t(), xs, offs=offs),
            loop(lambda e, a, b: torch.mm(dys[a:b].t(), xs[a:b], out=out[e]), out, lambda e: out[e].zero_()))


def cublas_checked(pass_, xs, w, dys, offsets, loop):
    """cuBLAS's grouped call for the pass, once its output has matched the per-expert loop's (both
    cuBLAS GEMMs with f32 sums: they differ by bf16 / f16 rounding at most)."""
    run, out = cublas_grouped.grouped_batched(pass_, xs, w, dys, offsets)
    run()
    loop()
    got, ref = out, loop.out
    err = (got.float() - ref.float()).abs().max().item()
    scale = ref.float().abs().max().item()
    if not err <= 1e-2 * max(scale, 1e-6):
        raise RuntimeError(f"cublasGemmGroupedBatchedEx's {pass_} differs from the per-expert loop by {err:.3g} "
                           f"(outputs up to {scale:.3g})")
    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--shapes", default="mixtral,deepseek,decode")
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "f16"])
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0,
                    help="workload seed (ktune's --workload-seed): the routing of the ktune runs set beside these")
    ap.add_argument("--settle-s", type=float, default=2.0,
                    help="warm: run each baseline back to back this long before timing it, so that it is timed at "
                    "the clocks a sustained load holds, as ktune's winners are (re-measured at the end of a "
                    "search that kept the GPU busy); 0: timed at once, at the boost clocks of a GPU that was idle")
    a = ap.parse_args()
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float16
    flush = torch.empty(512 << 20, dtype=torch.uint8, device="cuda")
    gpu = gpu_conditions.torch_device()  # torch's current device, by its PCI bus id (NVML numbers GPUs otherwise)
    if gpu.why:
        print(f"grouped_torch.py: the lines carry no conditions (SM clock, power): {gpu.why}", file=sys.stderr)
    for name in a.shapes.split(","):
        E, T, k, H, I = SHAPES[name]
        xs, w, dys = operands(E, T, k, H, I, dtype)
        _, offsets, _ = moe_routing.routing({"experts": E, "tokens": T, "topk": k}, a.seed)  # the passes share it
        for p in ("fwd", "dX", "dW"):
            fields = {"experts": E, "tokens": T, "topk": k, "hidden": H, "intermediate": I, "dtype": a.dtype, "pass": p}
            key = ",".join("%s=%s" % kv for kv in fields.items())
            read = (xs if p != "dX" else None, w if p != "dW" else None, dys if p != "fwd" else None)
            grouped, loop = baseline(p, *read, offsets)
            flops = 2.0 * T * k * H * I
            try:
                cublas = cublas_checked(p, *read, offsets, loop)
            except Exception as e:  # a cuBLAS without the call, or a wrong result: said, not timed
                cublas = None
                print(json.dumps({"key": key, "pass": p, "baseline": "cuBLAS grouped", "error": str(e).splitlines()[0]}),
                      flush=True)
            for mode, fl in (("warm", None), ("cold", flush)):
                for baseline_name, fn in (("torch._grouped_mm", grouped), ("per-expert torch.mm", loop),
                                          ("cuBLAS grouped", cublas)):
                    if fn is None:
                        continue
                    try:
                        if fl is None:
                            settle(fn, a.settle_s)
                        with gpu.sampling() as conditions:
                            us = time_us(fn, a.samples, fl)
                    except Exception as e:  # a torch without _grouped_mm, or a layout it refuses
                        print(json.dumps({"key": key, "pass": p, "mode": mode, "baseline": baseline_name,
                                          "error": str(e).splitlines()[0]}), flush=True)
                        continue
                    line = {"key": key, "pass": p, "mode": mode, "baseline": baseline_name,
                            "median_us": round(us, 2), "tflops": round(flops / us / 1e6, 1),
                            "settle_s": a.settle_s if fl is None else 0, "seed": a.seed,
                            "workload_rules": moe_routing.WORKLOAD_RULES}
                    if conditions:
                        line["conditions"] = conditions
                    print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
