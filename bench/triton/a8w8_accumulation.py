#!/usr/bin/env python3
"""How Triton's fp8 accumulation precision changes the a8w8 worker's error and time on this GPU:
for a few tile shapes (an mma.sync one, a 2-warp one, wgmma ones) and max_num_imprecise_acc None
(Triton's default: reduced-precision accumulation on sm_90), 0 (every product promoted to f32:
the worker's default), 32, 64, 128, the share of outputs outside ktune's default tolerance (atol
0.01 + rtol 0.01) against the worker's f32 reference, and the time (triton.testing.do_bench).

    python3 bench/triton/a8w8_accumulation.py     (bench/triton/RESULTS.md has the H100's figures)
"""
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "examples", "workers"))
import triton_a8w8_blockscale as w  # noqa: E402


def main():
    for M in (128, 1024):
        prob = {"M": M, "N": 4096, "K": 4096, "q_dtype": "fp8_e4m3", "out_dtype": "bf16"}
        x = w.workload(prob, 1)
        ref = w.reference(prob, x)
        print(f"M={M} N=4096 K=4096: max |ref| {ref.abs().max().item():.1f}, median |ref| {ref.abs().median().item():.1f}")
        for bm, warps in ((32, 4), (64, 2), (64, 4), (128, 8)):
            for acc in (None, 0, 32, 64, 128):
                cfg = dict(BLOCK_SIZE_M=bm, BLOCK_SIZE_N=128, BLOCK_SIZE_K=128, GROUP_SIZE_M=8, num_warps=warps,
                           num_stages=3, NUM_KSPLIT=1, cache_modifier="", waves_per_eu=2, kpack=2)
                launch = w.Launch(cfg, prob, x, fast_accum=True)
                launch.meta["MAX_IMPRECISE_ACC"] = acc
                out = launch().float()
                err = (out - ref).abs()
                bad = (err > 0.01 + 0.01 * ref.abs()).float().mean().item()
                ms = triton.testing.do_bench(launch, warmup=25, rep=100)
                print(f"  BLOCK_SIZE_M={bm} num_warps={warps} max_num_imprecise_acc={acc}: "
                      f"{bad * 100:.3f}% outside, max abs error {err.max().item():.4g}, {ms * 1e3:.1f} us")


if __name__ == "__main__":
    main()
