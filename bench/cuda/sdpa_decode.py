#!/usr/bin/env python3
"""The baseline of paged decode attention: PyTorch's SDPA (flash decoding) on the same shapes with
K/V laid out densely, [batch, kv_heads, context, head_dim], every sequence at full context (what a
dense kernel reads; the paged family's shapes with min_len = max_model_len). GQA through enable_gqa: K/V are read
once per kv head, as the paged kernel reads them. Timed with CUDA events, median of --samples:
cold (a 512 MiB buffer written before each launch evicts L2) and warm (20 launches back to back).
Prints one JSON line per (shape, mode): {"batch", "q_heads", "kv_heads", "head_dim", "context",
"dtype", "mode", "median_us", "kv_gbps"}."""
import argparse
import json
import statistics

import torch
import torch.nn.functional as F


def time_us(fn, samples, flush, batch=20):
    """Cold: one launch after a flush (which keeps the GPU busy while Python launches, so the
    launch's own latency is not timed). Warm: `batch` launches back to back between the events,
    averaged, as ktune's amortized method times them."""
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(samples + 3):
        if flush is not None:
            flush.add_(1)
        start.record()
        for _ in range(1 if flush is not None else batch):
            fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1000.0 / (1 if flush is not None else batch))
    return statistics.median(times[3:])


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batch", default="16,64")
    ap.add_argument("--q-heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--context", type=int, default=4096)
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "f16"])
    ap.add_argument("--samples", type=int, default=50)
    a = ap.parse_args()
    dt = torch.bfloat16 if a.dtype == "bf16" else torch.float16
    flush = torch.empty(128 << 20, dtype=torch.float32, device="cuda")
    for b in (int(x) for x in a.batch.split(",")):
        q = torch.randn(b, a.q_heads, 1, a.head_dim, dtype=dt, device="cuda")
        k = torch.randn(b, a.kv_heads, a.context, a.head_dim, dtype=dt, device="cuda")
        v = torch.randn_like(k)
        fn = lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        fn()
        kv_bytes = 2 * k.numel() * k.element_size()
        for mode, fl in (("cold", flush), ("warm", None)):
            us = time_us(fn, a.samples, fl)
            print(json.dumps({"batch": b, "q_heads": a.q_heads, "kv_heads": a.kv_heads, "head_dim": a.head_dim,
                              "context": a.context, "dtype": a.dtype, "mode": mode, "median_us": round(us, 2),
                              "kv_gbps": round(kv_bytes / us / 1e3, 1)}), flush=True)


if __name__ == "__main__":
    main()
