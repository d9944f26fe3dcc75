#!/usr/bin/env python3
"""Paged decode attention against its ceiling and its baseline, from runs of one device call:
  paged_report.py ATTN_COLD ATTN_WARM READ_COLD READ_WARM [SDPA_JSONL]
ATTN_* are ktune runs of the paged_attention family (cold: --method per_launch, warm: amortized),
READ_* runs of bench/cuda/paged_read.json over the same shapes (the same lengths, page tables and
pools: the bytes attention must read, read by the fastest config of a kernel that computes
nothing). Each number is the run's winner as results.json records it (its median latency). Prints
per shape and mode: attention µs, ceiling µs, % of the ceiling (ceiling / attention), and for the
full-length shapes (min_len = max_model_len) SDPA's dense µs (sdpa_decode.py, same call) and SDPA / attention."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from ktune_results import winners  # noqa: E402


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    attn = {"cold": winners(sys.argv[1]).by_shape, "warm": winners(sys.argv[2]).by_shape}
    read = {"cold": winners(sys.argv[3]).by_shape, "warm": winners(sys.argv[4]).by_shape}
    sdpa = {}
    if len(sys.argv) > 5:
        for line in open(sys.argv[5]):
            if line.startswith("{"):
                s = json.loads(line)
                sdpa[(s["batch"], s["q_heads"], s["kv_heads"], s["head_dim"], s["context"], s["mode"])] = s["median_us"]
    print("| sequences | heads q/kv | head_dim | page | context | lengths | mode | attention µs | ceiling µs | % of ceiling | SDPA dense µs | SDPA / attention | config |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for mode in ("cold", "warm"):
        for key, (us, cfg) in sorted(attn[mode].items()):
            f = dict(key)
            ceiling = read[mode].get(key, (float("nan"), None))[0]
            base = sdpa.get((f["num_sequences"], f["num_q_heads"], f["num_kv_heads"], f["head_dim"], f["max_model_len"], mode))
            full = f["min_len"] == f["max_model_len"]
            base_cols = "%.1f | %.3f" % (base, base / us) if base and full else "- | -"
            print("| %d | %d/%d | %d | %d | %d | %s | %s | %.1f | %.1f | %.1f %% | %s | %s |" % (
                f["num_sequences"], f["num_q_heads"], f["num_kv_heads"], f["head_dim"], f["page_size"],
                f["max_model_len"], "full" if full else "%d..%d" % (f["min_len"], f["max_model_len"]), mode, us, ceiling,
                100 * ceiling / us, base_cols, " ".join("%s=%s" % kv for kv in sorted(cfg.items()))))


if __name__ == "__main__":
    main()
