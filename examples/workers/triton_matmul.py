#!/usr/bin/env python3
"""A ktune worker for a Triton GEMM with aiter's tuning parameters: C = A @ B, f16 in, f32
accumulation, f16 out (row-major), tiled BLOCK_SIZE_M x BLOCK_SIZE_N x BLOCK_SIZE_K with grouped
tile order (GROUP_SIZE_M), num_warps, num_stages and the loads' `cache_modifier` ("" or ".cg").

    ktune tune --worker "python3 examples/workers/triton_matmul.py" --shape "M=16,1024,4096 N=4096 K=4096"

Configs compile ahead of their measure on a thread pool (one thread a core: Triton's compiler
releases the GIL in its MLIR passes and ptxas), so compilation overlaps measurement. Timing:
each sample replays a CUDA graph of `launches` launches between two events, so Python's launch
overhead is not timed; the launches rotate over copies of the inputs larger than twice the L2
cache, so a small-M problem is not timed with its weights L2-resident. bench/triton/ compares
this against triton.autotune over the same configs (CONFIGS).
"""
import itertools
import os
import sys
import threading
import time

import torch
import triton
import triton.language as tl

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import ktune_worker as kw  # noqa: E402

_TRACE = os.environ.get("KTUNE_TRITON_TRACE")  # a file: when each phase ran (where a run's time goes)
_T0 = time.perf_counter()


def trace(what):
    if _TRACE:
        with open(_TRACE, "a") as f:
            f.write(f"{time.perf_counter() - _T0:.4f} {threading.current_thread().name} {what}\n")


# The space, in the order ktune measures it; CONFIGS is the same list for triton.autotune.
SPACE = {
    "BLOCK_SIZE_M": [16, 64, 128],
    "BLOCK_SIZE_N": [64, 128, 256],
    "BLOCK_SIZE_K": [64],
    "GROUP_SIZE_M": [8],
    "num_warps": [4, 8],
    "num_stages": [3, 4],
    "cache_modifier": ["", ".cg"],
}
CONFIGS = [dict(zip(SPACE, values)) for values in itertools.product(*SPACE.values())]


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                  GROUP_SIZE_M: tl.constexpr, cache_modifier: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0, cache_modifier=cache_modifier)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0, cache_modifier=cache_modifier)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, acc.to(tl.float16), mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def launch(config, a, b, c, kernel=matmul_kernel, warmup=False):
    """Launches (or with warmup=True only compiles) one config; `kernel` may be an autotuned one."""
    M, K = a.shape
    N = b.shape[1]
    meta = {k: v for k, v in config.items() if k not in ("num_warps", "num_stages")}
    grid = (triton.cdiv(M, config["BLOCK_SIZE_M"]) * triton.cdiv(N, config["BLOCK_SIZE_N"]),)
    args = (a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    if warmup:
        return kernel.warmup(*args, **meta, num_warps=config["num_warps"], num_stages=config["num_stages"], grid=grid)
    return kernel[grid](*args, **meta, num_warps=config["num_warps"], num_stages=config["num_stages"])


def inputs(problem, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    M, N, K = problem["M"], problem["N"], problem["K"]
    a = torch.randn((M, K), device="cuda", dtype=torch.float16, generator=gen)
    b = torch.randn((K, N), device="cuda", dtype=torch.float16, generator=gen)
    one = (M * K + K * N + M * N) * 2
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    copies = max(1, min(16, -(-2 * l2 // one)))
    # Identical values at other addresses: one reference validates every copy.
    return [(a.clone(), b.clone(), torch.empty((M, N), device="cuda", dtype=torch.float16)) for _ in range(copies)]


def reference(problem, x):
    trace(f"reference {problem}")
    a, b, _ = x[0]
    return torch.matmul(a.float(), b.float())


def build(config, problem, x):
    trace(f"build {config}")
    launch(config, *x[0], warmup=True)  # compiles here, on a prepare thread
    trace("built")
    turn = itertools.cycle(range(len(x)))

    def run():
        a, b, c = x[next(turn)]
        launch(config, a, b, c)
        return c
    return run


def compare(out, ref, tol):
    trace("compare")
    err = (out.float() - ref).abs()
    bad = ~(err <= tol.atol + tol.rtol * ref.abs())  # NaN counts as a mismatch
    return float(err.nan_to_num(float("inf")).max()), float(bad.float().mean())


_graphs = {}


def graph_timer(run, launches):
    """ns per launch of `launches` launches replayed as one CUDA graph (captured once per run)."""
    key = (id(run), launches)
    if key not in _graphs:
        _graphs.clear()  # one config at a time: keep only its graph
        trace(f"capture {launches}")
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, capture_error_mode="thread_local"):  # prepare threads keep compiling
            for _ in range(launches):
                run()
        _graphs[key] = (g, run)  # holding run keeps id(run) from being reused by another config
    g = _graphs[key][0]
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    g.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e6 / launches


def device():
    p = torch.cuda.get_device_properties(0)
    return {"backend": "triton", "index": 0, "name": p.name,
            "properties": {"sms": float(p.multi_processor_count), "cc_major": float(p.major),
                           "cc_minor": float(p.minor), "l2_bytes": float(p.L2_cache_size),
                           "memory_bytes": float(p.total_memory)},
            "text": {"triton": triton.__version__, "torch": torch.__version__}}


FAMILY = kw.Family(
    name="triton_matmul", description="Triton GEMM, f16 in, f32 accumulate (aiter's parameters)",
    key_fields=["M", "N", "K"], bucket_field="M", flops="2*M*N*K", bytes="2*(M*K+K*N+M*N)",
    space=SPACE, inputs=inputs, reference=reference, build=build, compare=compare, timer=graph_timer,
    tolerance=kw.Tolerance(atol=1e-2, rtol=1e-2))

if __name__ == "__main__":
    trace("serving")
    kw.serve(FAMILY, backend="triton", device=device(), prepare_threads=os.cpu_count() or 4)
