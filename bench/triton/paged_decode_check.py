#!/usr/bin/env python3
"""GPU check of examples/workers/triton_paged_decode.py, without ktune: every value of every
parameter, over ragged and full-length shapes (page 16 and 64, GQA groups 1, 4 and 8, bf16 and
f16), validated against the worker's reference as the worker validates (same tolerance); then the
controls that show a pass means something:
  - the reference agrees with PyTorch's SDPA on the same K/V laid out densely (a second reference);
  - a kernel given the unshuffled table, or told every sequence is full length, FAILS validation.
Prints one line per check and ends with 'N passed, M failed' (exit 1 on a failure).
--time N then times N random configs of each of the bench shapes (gpu_run.sh's paged stage) with
the worker's timer, warm (20 launches a sample) and cold (one launch after an L2 flush), medians
of 10 samples, and prints each shape's fastest with the K/V read rate it amounts to: a quick look
without ktune, no search.

    python3 bench/triton/paged_decode_check.py [--quick] [--time N]
"""
import argparse
import os
import random
import statistics
import sys
from concurrent.futures import ThreadPoolExecutor

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "examples", "workers"))
import triton_paged_decode as pd  # noqa: E402

SHAPES = [  # (fields, why)
    (dict(num_sequences=7, num_q_heads=32, num_kv_heads=8, head_dim=128, page_size=16, max_model_len=1000, min_len=1,
          dtype="bf16"), "ragged, GQA 4, a partial last page"),
    (dict(num_sequences=5, num_q_heads=8, num_kv_heads=8, head_dim=64, page_size=64, max_model_len=700, min_len=1,
          dtype="f16"), "ragged, MHA, page 64"),
    (dict(num_sequences=3, num_q_heads=16, num_kv_heads=2, head_dim=128, page_size=16, max_model_len=512, min_len=512,
          dtype="bf16"), "full length, GQA 8"),
    (dict(num_sequences=4, num_q_heads=4, num_kv_heads=1, head_dim=256, page_size=32, max_model_len=300, min_len=1,
          dtype="bf16"), "ragged, head_dim 256"),
]


def covering(space, problem, quick):
    """Configs that give every parameter each of its values at least once (all of them unless quick)."""
    every = pd.configs(space, problem)
    if not quick:
        return every
    picked, seen = [], set()
    for c in every:
        new = {(k, v) for k, v in c.items()} - seen
        if new:
            picked.append(c)
            seen |= new
    return picked


def check(name, ok, detail, tally):
    tally[ok] += 1
    print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)


def dense_sdpa(x):
    """SDPA over each sequence's K/V gathered densely: an independent reference."""
    q, k, v, table, lens = x["q"], x["k"], x["v"], x["table"], x["lengths"].tolist()
    out = []
    for b, n in enumerate(lens):
        pages = table[b, :-(-n // k.shape[2])].long()
        kb = k[pages].permute(1, 0, 2, 3).reshape(k.shape[1], -1, k.shape[3])[:, :n].float()
        vb = v[pages].permute(1, 0, 2, 3).reshape(v.shape[1], -1, v.shape[3])[:, :n].float()
        group = q.shape[1] // k.shape[1]
        o = torch.nn.functional.scaled_dot_product_attention(
            q[b].float()[:, None], kb.repeat_interleave(group, 0), vb.repeat_interleave(group, 0))
        out.append(o[:, 0])
    return torch.stack(out)


def unshuffled(table, lengths, page_size):
    """The table of the same pool unshuffled: sequence after sequence, each one's pages in order (what
    a kernel that ignored the table would read)."""
    out, at = torch.zeros_like(table), 0
    for b, n in enumerate(lengths.tolist()):
        used = -(-n // page_size)
        out[b, :used] = torch.arange(at, at + used, dtype=table.dtype, device=table.device)
        at += used
    return out


def validate(launch, ref):
    err, frac = pd.compare(launch(), ref, pd.TOLERANCE)
    return frac <= pd.TOLERANCE.max_mismatch_fraction, f"max abs error {err:.3g}, {frac * 100:.3g}% outside"


def controls(problem, x, ref, tally):
    dense = dense_sdpa(x)
    err = (dense - ref).abs().max().item()
    check("reference = dense SDPA", err < 1e-3, f"max abs difference {err:.3g}", tally)
    config = dict(kv_pages_per_block=1, q_heads_per_block=1, num_warps=4, num_stages=2, kv_splits=1, dot=1)
    wrong = [("the unshuffled page table", dict(x, table=unshuffled(x["table"], x["lengths"], problem["page_size"])))]
    if problem["min_len"] < problem["max_model_len"]:
        wrong.append(("full lengths", dict(x, lengths=torch.full_like(x["lengths"], problem["max_model_len"]))))
    for what, bad in wrong:
        launch = pd.Launch(config, problem, bad)
        ok, detail = validate(launch, ref)
        check(f"control: {what} fails", not ok, detail, tally)


BENCH = [dict(num_sequences=n, num_q_heads=32, num_kv_heads=8, head_dim=128, page_size=page, max_model_len=length,
              min_len=low, dtype="bf16")
         for n, length, low in ((16, 4096, 4096), (64, 4096, 4096), (35, 8192, 1)) for page in (16, 64)]


def kv_bytes(x):
    """Bytes of K and V the sequences' lengths cover (the pages' unused tails are not counted)."""
    return 2 * sum(x["lengths"].tolist()) * x["k"].shape[1] * x["k"].shape[3] * x["k"].element_size()


def time_configs(count, pool):
    """The fastest of `count` random configs per bench shape, warm and cold."""
    timer = pd.GraphTimer()
    for fields in BENCH:
        x = pd.inputs(fields, seed=0)
        ref = pd.reference(fields, x)
        every = pd.configs(pd.SPACE, fields)
        picked = random.Random(1).sample(every, min(count, len(every)))
        launches = [pd.Launch(c, fields, x) for c in picked]
        best = {}
        for launch, fut in [(la, pool.submit(la.compile)) for la in launches]:
            fut.result()
            if not validate(launch, ref)[0]:
                print(f"  {launch.config} fails validation", flush=True)
                continue
            for mode, n in (("warm", 20), ("cold", 1)):
                us = statistics.median(timer(launch, n) for _ in range(10)) / 1e3
                if mode not in best or us < best[mode][0]:
                    best[mode] = (us, launch.config)
            timer.graphs.clear()
        gbs = kv_bytes(x) / 1e3
        for mode, (us, cfg) in sorted(best.items()):
            print(f"time {mode} {' '.join(f'{k}={v}' for k, v in fields.items())}: {us:.1f} us, K/V {gbs / us:.0f} GB/s, {cfg}", flush=True)
        del x, ref, launches


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a covering subset of configs per shape")
    ap.add_argument("--time", type=int, default=0, metavar="N", help="then time N random configs per bench shape")
    args = ap.parse_args()
    tally = {True: 0, False: 0}
    pool = ThreadPoolExecutor(os.cpu_count() or 4)
    for fields, why in SHAPES:
        x = pd.inputs(fields, seed=0)
        ref = pd.reference(fields, x)
        print(f"shape {fields} ({why}), lengths {x['lengths'].tolist()}", flush=True)
        controls(fields, x, ref, tally)
        launches = [pd.Launch(c, fields, x) for c in covering(pd.SPACE, fields, args.quick)]
        failed = []
        for launch, fut in [(la, pool.submit(la.compile)) for la in launches]:
            try:
                fut.result()
                ok, detail = validate(launch, ref)
            except Exception as e:  # a compile error is a failure of this config
                ok, detail = False, f"{type(e).__name__}: {str(e)[:300]}"
            if not ok:
                failed.append(f"{launch.config} {detail}")
        check(f"{len(launches)} configs", not failed, "; ".join(failed[:5]) or "every one within tolerance", tally)
    if args.time:
        time_configs(args.time, pool)
    print(f"{tally[True]} passed, {tally[False]} failed")
    sys.exit(1 if tally[False] else 0)


if __name__ == "__main__":
    main()
