#!/usr/bin/env python3
"""ktune's MoE routing (core/src/moe_routing.cpp) in Python, stdlib only, so a baseline script
routes exactly the tokens a ktune run of the same shape routes. One rule everywhere (the CPU
family, a kernel spec's "routing" argument, this port): generate(experts, tokens, topk,
moe_routing_seed(workload seed, experts, tokens, topk)). The pass, the sizes, the dtype and a
tensor-parallel split do not enter, so fwd, dX and dW of one layer share its routing, as a real MoE
layer's passes do. tests/python/test_moe_routing.py pins it against the C++ values.

routing(key_fields, seed=0) -> (expert per routed row, offsets, rows in expert order)"""
import math

MASK = (1 << 64) - 1
# The version of ktune's workload rules (core/include/ktune/workload_rules.h) that made this the
# routing: a worker built on it says so in its hello (workload_rules_since), and ktune refuses to
# resume a run of it made under older rules.
WORKLOAD_RULES = 2


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def draw(seed, i):
    return splitmix64(seed ^ ((i * 0xD1B54A32D192ED03) & MASK))


def unit_draw(seed, i):
    return (draw(seed, i) >> 11) * 2.0**-53


def fnv1a64(data, h=0xCBF29CE484222325):
    for b in data.encode():
        h = ((h ^ b) * 0x100000001B3) & MASK
    return h


def moe_routing_seed(workload_seed, experts, tokens, topk):
    return workload_seed ^ fnv1a64("moe_routing experts=%d tokens=%d topk=%d" % (experts, tokens, topk))


def generate(experts, tokens, topk, seed):
    """Each token's topk distinct experts, popularity 1/rank^1.5 over a seeded ranking."""
    if not (experts >= 1 and tokens >= 1 and topk >= 1) or topk > experts:
        raise ValueError("MoE routing needs 1 <= topk <= experts and tokens >= 1")
    rank = list(range(experts))
    for i in range(experts, 1, -1):
        j = draw(seed, i - 1) % i
        rank[i - 1], rank[j] = rank[j], rank[i - 1]
    popularity = []
    for e in range(experts):
        k = float(rank[e] + 1)
        popularity.append(1.0 / (k * math.sqrt(k)))
    expert = []
    for t in range(tokens):
        left = list(popularity)
        for j in range(topk):
            total = 0.0
            for v in left:  # summed in order, as std::accumulate does
                total += v
            u = unit_draw(seed, experts + t * topk + j) * total
            e = -1
            for c in range(experts):
                if left[c] <= 0:
                    continue
                e = c
                if u < left[c]:
                    break
                u -= left[c]
            left[e] = 0.0
            expert.append(e)
    return expert


def expert_order(expert, experts):
    """Offsets (experts + 1) and routed rows sorted by expert, stable."""
    offsets = [0] * (experts + 1)
    for e in expert:
        offsets[e + 1] += 1
    for e in range(experts):
        offsets[e + 1] += offsets[e]
    nxt = offsets[:-1]
    rows = [0] * len(expert)
    for r, e in enumerate(expert):
        rows[nxt[e]] = r
        nxt[e] += 1
    return offsets, rows


def routing(fields, seed=0):
    """fields: the problem's key fields, e.g. {"experts": 8, "tokens": 16, "topk": 2, ...} (the others are
    not read); seed: the run's workload seed (ktune's --workload-seed)."""
    experts, tokens, topk = int(fields["experts"]), int(fields["tokens"]), int(fields["topk"])
    expert = generate(experts, tokens, topk, moe_routing_seed(seed, experts, tokens, topk))
    offsets, rows = expert_order(expert, experts)
    return expert, offsets, rows
