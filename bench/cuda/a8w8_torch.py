#!/usr/bin/env python3
"""A second opinion on the CUDA gemm_a8w8_blockscale family's winners, timed in the same device call as
its tune (gpu_run.sh's a8w8_native stage) but in a process of its own: the paired ratio is the run's
own (its baseline, cuBLASLt block-scaled, timed in alternation with each winner: "vs baseline").
Here, beside the native winners: torch._scaled_mm (cuBLASLt's fp8 GEMM)
with blockwise scales (1x128 for A as [M, K/128] M-fastest, 128x128 for W as [K/128, N/128]: the
call DeepSeek-V3 serving makes, CUDA 12.9 and a torch that has it) and with per-tensor scales, on
random e4m3 operands of each shape, bf16 out. Timed warm from a CUDA graph of 20 calls replayed
between CUDA events (the median of --samples replays), as ktune's amortized method times the native
kernel: a few-µs GEMM called from Python back to back measures Python (about 27 µs a call on the
H100, whatever M), not cuBLAS. Each baseline first runs back to back for --settle-s (default 2 s)
so that it is timed at the clocks a sustained load holds, as the native winners are (re-measured
at the end of a search that kept the GPU busy): a large fp8 GEMM holds an H200 at its power cap,
where timed at once it runs at the boost clock.

    python3 bench/cuda/a8w8_torch.py --native /tmp/a8w8_native/native [--m 16,128,1024] [--nk 4096x4096,2112x7168]
        [--int8 /tmp/a8w8_native/int8 [--int8-m 16,128,1024] [--int8-nk 4096x4096]]

Prints one row per shape: the native winner's median (the run's re-measured one,
bench/ktune_results.py) and TFLOP/s, each baseline's µs, and "x blockwise" / "x per-tensor": the
baseline's time over the native one (> 1: the native kernel is faster), and the median SM clock
each was timed at ("MHz native / blockwise": the native's from the run's results.json, torch's read
through NVML while it ran, python/ktune_worker/gpu_conditions.py; "-" where none could be read): a
ratio of two times taken at clocks far apart carries the clocks' ratio too. "-" where torch could
not run a baseline (its reason on stderr) or the run has no winner for the shape.

--int8 RUN (the family tuned with q_dtype=int8) adds a second table after it: the int8 winners
beside torch._int_mm, cuBLASLt's int8 x int8 -> int32 GEMM on random codes of the same shape,
timed the same way. It is not the same op: no scales, int32 out, so it is an unscaled lower bound
on the work, not a block-scaled GEMM (torch has none for int8). _int_mm takes M > 16 only: at
M <= 16 it is timed at M = 17, its smallest, and the cell says so."""
import argparse
import os
import statistics
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import ktune_results  # noqa: E402
from torch_settle import settle  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))
from ktune_worker import gpu_conditions  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "workers"))
import triton_common  # noqa: E402

SCALE_BLOCK = 128
CALLS = 20  # calls a graph replays
INT_MM_MIN_M = 17  # torch._int_mm refuses M <= 16


def graph_us(fn, samples):
    """µs a call of `fn`: the median over `samples` replays of a CUDA graph of CALLS calls, timed by
    the Triton workers' GraphTimer (examples/workers/triton_common.py), as they time their baselines."""
    fn()  # eager first: an op this torch lacks fails here, not in the capture
    torch.cuda.synchronize()
    timer = triton_common.GraphTimer()
    timer(fn, CALLS)  # captures the graph and replays it once
    return statistics.median(timer(fn, CALLS) for _ in range(samples)) / 1e3


def baselines(M, N, K):
    """[(name, function)]: torch._scaled_mm blockwise, then per-tensor, on random finite e4m3 codes."""
    dev = "cuda"
    a = (torch.rand(M, K, device=dev) * 896 - 448).to(torch.float8_e4m3fn)
    w = (torch.rand(N, K, device=dev) * 896 - 448).to(torch.float8_e4m3fn)
    kb, nb = K // SCALE_BLOCK, (N + SCALE_BLOCK - 1) // SCALE_BLOCK
    a_scale = torch.rand(M, kb, device=dev).add_(0.01).t().contiguous().t()  # [M, K/128], M fastest
    b_scale = torch.rand(nb, kb, device=dev).add_(0.01).t()  # [K/128, N/128]
    one = torch.ones((), dtype=torch.float32, device=dev)
    wt = w.t()  # [K, N], column-major: what cuBLASLt's fp8 GEMM takes
    return [("blockwise", lambda: torch._scaled_mm(a, wt, a_scale, b_scale, out_dtype=torch.bfloat16)),
            ("per-tensor", lambda: torch._scaled_mm(a, wt, one, one, out_dtype=torch.bfloat16))]


def int_mm(M, N, K):
    """torch._int_mm (int8 x int8 -> int32, no scales) on random codes, at M = 17 where M is smaller
    (the least it takes): (M timed, function)."""
    dev = "cuda"
    m = max(M, INT_MM_MIN_M)
    a = torch.randint(-127, 128, (m, K), dtype=torch.int8, device=dev)
    wt = torch.randint(-127, 128, (N, K), dtype=torch.int8, device=dev).t()  # [K, N], column-major
    return m, lambda: torch._int_mm(a, wt)


def native_us(run_dir, q_dtype="fp8_e4m3"):
    """{(M, N, K): (µs, config, SM MHz or None)} of the run's winners (q_dtype, bf16 out)."""
    if not run_dir:
        return {}
    out = {}
    won = ktune_results.winners(run_dir)
    for shape, (us, config) in won.by_shape.items():
        f = dict(shape)
        if f.get("q_dtype", "fp8_e4m3") == q_dtype and f.get("out_dtype", "bf16") == "bf16":
            out[(int(f["M"]), int(f["N"]), int(f["K"]))] = (us, config, won.conditions[shape].get("sm_clock_mhz"))
    return out


def timed(gpu, fn, samples, settle_s):
    """(µs, SM MHz or None) of `fn` after settle_s of it back to back, the clock read while it was timed."""
    settle(fn, settle_s)
    with gpu.sampling() as conditions:
        us = graph_us(fn, samples)
    return us, conditions.get("sm_clock_mhz")


def mhz(value):
    return "-" if value is None else f"{value:.0f}"


def shapes(ms, nks):
    """(M, N, K) for every N x K pair of `nks` at every M of `ms` (comma-separated)."""
    pairs = [tuple(int(x) for x in nk.split("x")) for nk in nks.split(",")]
    return [(int(m), N, K) for N, K in pairs for m in ms.split(",")]


def config_cell(config):
    return " ".join(f"{k}={v}" for k, v in (config or {}).items()) or "-"


def int8_table(gpu, run_dir, ms, nks, samples, settle_s):
    """The int8 winners of `run_dir` beside torch._int_mm (an unscaled lower bound: see the module's help)."""
    native = native_us(run_dir, "int8")
    print("\nint8: beside torch._int_mm (cuBLASLt int8 x int8 -> int32 without scales: an unscaled lower bound "
          "on the work, not the same op)")
    head = ["M", "N", "K", "native int8 us", "TOP/s", "_int_mm us", "x _int_mm", "MHz native / _int_mm", "config"]
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for M, N, K in shapes(ms, nks):
        m_timed, base, base_mhz = None, None, None
        try:
            m_timed, fn = int_mm(M, N, K)
            base, base_mhz = timed(gpu, fn, samples, settle_s)
        except Exception as e:  # a layout or size this torch refuses
            print(f"a8w8_torch.py: torch._int_mm failed at M={M} N={N} K={K}: {str(e).splitlines()[0]}",
                  file=sys.stderr)
        us, config, native_mhz = native.get((M, N, K), (None, None, None))
        cells = [str(M), str(N), str(K), f"{us:.1f}" if us else "-", f"{2 * M * N * K / (us * 1e6):.0f}" if us else "-"]
        cells.append("-" if base is None else f"{base:.1f}" + (f" (M={m_timed})" if m_timed != M else ""))
        cells.append(f"{base / us:.2f}" if us and base is not None else "-")
        cells.append(f"{mhz(native_mhz)} / {mhz(base_mhz)}")
        cells.append(config_cell(config))
        print("| " + " | ".join(cells) + " |", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--native", help="the ktune run folder of the native family (its results.json)")
    ap.add_argument("--m", default="16,128,1024")
    ap.add_argument("--nk", default="4096x4096", help="NxK pairs, comma-separated; each is timed at every M")
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--int8", help="the ktune run folder of the family tuned with q_dtype=int8: adds its table")
    ap.add_argument("--int8-m", default="16,128,1024")
    ap.add_argument("--int8-nk", default="4096x4096")
    ap.add_argument("--settle-s", type=float, default=2.0,
                    help="run each baseline back to back this long before timing it (0: timed at once)")
    a = ap.parse_args()
    native = native_us(a.native)
    gpu = gpu_conditions.torch_device()  # torch's current device, by its PCI bus id (NVML numbers GPUs otherwise)
    if gpu.why:
        print(f"a8w8_torch.py: no SM clocks beside the baselines: {gpu.why}", file=sys.stderr)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, each baseline settled {a.settle_s:g} s")
    head = ["M", "N", "K", "native us", "TFLOP/s", "blockwise us", "per-tensor us", "x blockwise", "x per-tensor",
            "MHz native / blockwise", "config"]
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for M, N, K in shapes(a.m, a.nk):
        times, clocks = {}, {}
        for name, fn in baselines(M, N, K):
            try:
                times[name], clocks[name] = timed(gpu, fn, a.samples, a.settle_s)
            except Exception as e:  # a torch without blockwise _scaled_mm, or a layout it refuses
                print(f"a8w8_torch.py: {name} torch._scaled_mm failed at M={M} N={N} K={K}: "
                      f"{str(e).splitlines()[0]}", file=sys.stderr)
        us, config, native_mhz = native.get((M, N, K), (None, None, None))
        cells = [str(M), str(N), str(K), f"{us:.1f}" if us else "-", f"{2 * M * N * K / (us * 1e6):.0f}" if us else "-"]
        cells += [f"{times[n]:.1f}" if n in times else "-" for n in ("blockwise", "per-tensor")]
        cells += [f"{times[n] / us:.2f}" if us and n in times else "-" for n in ("blockwise", "per-tensor")]
        cells.append(f"{mhz(native_mhz)} / {mhz(clocks.get('blockwise'))}")
        cells.append(config_cell(config))
        print("| " + " | ".join(cells) + " |", flush=True)
    if a.int8:
        int8_table(gpu, a.int8, a.int8_m, a.int8_nk, a.samples, a.settle_s)


if __name__ == "__main__":
    main()
