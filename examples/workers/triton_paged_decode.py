#!/usr/bin/env python3
"""A ktune worker for paged decode attention in Triton: the `paged_attention` family of
resources/kernels/cuda/paged_attention.json (its key fields, their meaning, its workload), tuned
over Triton's parameters with tpu-tune's meaning (rpa-v3: KV pages per block, q per block, the
number of sequences, the tp size dividing heads).

    ktune tune --worker "python3 examples/workers/triton_paged_decode.py" [--tp-size 4] \\
      --shape "num_sequences=16,64 num_q_heads=32 num_kv_heads=8 head_dim=128 page_size=16,64 max_model_len=4096 min_len=4096"

The problem: one query token per sequence (decode), q and out [num_sequences, q_heads, head_dim];
K and V pools of pages [num_pages, kv_heads, page_size, head_dim] holding exactly the pages the
sequences use, shuffled over the pool through the page table [num_sequences, ceil(max_model_len /
page_size)]; lengths seeded uniform in [min_len, max_model_len] with one at max_model_len
(min_len=max_model_len: all at full context); GQA (q head h reads kv head h / (q_heads / kv_heads)); f32
accumulation, softmax scale 1/sqrt(head_dim). Tensor parallelism is the spec's: give the global
shape and `ktune tune --tp-size T`, and ktune tunes the local (per-rank) one, num_q_heads / T and
num_kv_heads / T (one per rank when fewer than T), as tpu-tune's --num-q-heads does. The spec's
shape rules refuse a shape no kernel runs (num_kv_heads not dividing num_q_heads, head_dim not 32,
64, 128 or 256, min_len past max_model_len), naming the rule.

The kernel: a program per (sequence, kv head and q_heads_per_block of its q heads, KV split). It
walks its split in blocks of kv_pages_per_block pages, gathering each token's row through the page
table (a kv head's rows of one page are contiguous), scores the block with tl.dot with the q heads
as the rows of A (padded to 16) or, for one q head (dot=0), by a broadcast multiply and sum, and
keeps an online softmax in f32 (exp2 of log2-scaled scores). With kv_splits > 1 (flash decoding)
each split writes its normalized partial output and log-sum-exp, and a second Triton kernel merges
a sequence's splits; both launches are one timed launch.

Timing: each sample replays a CUDA graph of the launch(es). A sample of one launch (--method
per_launch, and the first sample of amortized) is cold: a buffer twice the L2's size is written
first, outside the timed events; amortized samples of many launches run back to back (warm).

Flags narrow the space (comma-separated lists, tpu-tune's --kv-block-sizes and --q-block-sizes):
--kv-block-sizes, --q-block-sizes, --num-warps, --num-stages, --kv-splits, --dot.
"""
import math
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SPEC = os.path.join(ROOT, "resources", "kernels", "cuda", "paged_attention.json")
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, HERE)
import ktune_worker as kw  # noqa: E402
from triton_common import GraphTimer, compare, device  # noqa: E402,F401 (device: the hello's, below)
import triton_common  # noqa: E402

# torch, triton and tl are None where not importable: the GPU parts need them; the rest
# (flags, the family, the page tables) is plain Python.
from triton_common import tl, torch, triton  # noqa: E402

# Candidates of each parameter, in the order ktune measures them (the first is the default).
SPACE = {
    "kv_pages_per_block": [1, 2, 4, 8, 16],  # KV pages one program loads per loop iteration
    "q_heads_per_block": [4, 1, 2, 8, 16],  # q heads of one GQA group a program serves (K/V read once for them)
    "num_warps": [4, 2, 8],
    "num_stages": [2, 1, 3, 4],
    "kv_splits": [1, 2, 4, 8, 16],  # flash decoding: partitions of a sequence, merged by log-sum-exp
    "dot": [1, 0],  # 1: scores and P V by tl.dot (q heads padded to 16 rows); 0: multiply and sum (one q head)
}
CONSTRAINTS = [
    "mod(num_q_heads / num_kv_heads, q_heads_per_block) == 0",
    "kv_pages_per_block * page_size >= 16 && kv_pages_per_block * page_size <= 256",
    "dot == 1 || q_heads_per_block == 1",
    "kv_splits == 1 || kv_splits * kv_pages_per_block * page_size <= max_model_len",
    # Pipelined tl.dot operands of K and V stay in shared memory: 256 tokens of head_dim 256 need 272 KiB
    # (an H100 has 227), 128 of them 144 KiB (an A100 has 163).
    "dot == 0 || num_stages == 1 || kv_pages_per_block * page_size * head_dim <= 32768",
]
FLAGS = {  # flag -> parameter it narrows
    "--kv-block-sizes": "kv_pages_per_block",
    "--q-block-sizes": "q_heads_per_block",
    "--num-warps": "num_warps",
    "--num-stages": "num_stages",
    "--kv-splits": "kv_splits",
    "--dot": "dot",
}
Q_RANGE, KV_RANGE = 7.5, 1.0  # the CUDA spec's inits: peaked softmaxes, so a wrong page shows
TOLERANCE = kw.Tolerance(atol=0.005, rtol=0.01)  # the CUDA spec's check


def parse_args(argv):
    """The worker's flags: each narrows one parameter to the listed values (which must be candidates).
    `--device I` is the one ktune appends with --devices."""
    return triton_common.parse_space("triton_paged_decode.py", __doc__, argv, SPACE, FLAGS, _values)


def _values(parser, flag, param, given):
    try:
        return [int(v) for v in given.split(",")]
    except ValueError:
        parser.error(f"{flag} {given!r}: expected comma-separated whole numbers, e.g. {flag} 1,2,4")


def spec_family():
    """What the native family declares that this worker shares (triton_common.spec_family): SHARDING
    divides the heads."""
    return triton_common.spec_family(SPEC)


SHARDING = triton_common.SHARDING


# --- the workload: lengths and page table in plain Python, tensors in torch ---------------------

def lengths(problem, seed):
    """Sequence lengths: uniform in [min_len, max_model_len] with one at max_model_len."""
    n, top = problem["num_sequences"], problem["max_model_len"]
    low = problem.get("min_len", 1)
    rng = random.Random(seed * 2 + 1)
    out = [rng.randint(low, top) for _ in range(n)]
    out[rng.randrange(n)] = top
    return out


def page_table(lens, page_size, max_pages, seed):
    """(rows of max_pages physical page numbers, pool size): every used page of every sequence once,
    shuffled over one pool of exactly the pages used; entries past a sequence's pages are 0."""
    used = [-(-n // page_size) for n in lens]
    pool = list(range(sum(used)))
    random.Random(seed * 2 + 2).shuffle(pool)
    rows, at = [], 0
    for u in used:
        rows.append(pool[at:at + u] + [0] * (max_pages - u))
        at += u
    return rows, len(pool)


def workload(problem, seed, device="cuda"):
    """q, K and V pools, page table and lengths on `device`, seeded."""
    p = problem
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[p.get("dtype", "bf16")]
    max_pages = -(-p["max_model_len"] // p["page_size"])
    lens = lengths(p, seed)
    rows, pages = page_table(lens, p["page_size"], max_pages, seed)
    gen = torch.Generator(device=device).manual_seed(seed)

    def uniform(shape, r):
        return torch.empty(shape, dtype=dtype, device=device).uniform_(-r, r, generator=gen)
    pool = (pages, p["num_kv_heads"], p["page_size"], p["head_dim"])
    return {"q": uniform((p["num_sequences"], p["num_q_heads"], p["head_dim"]), Q_RANGE),
            "k": uniform(pool, KV_RANGE), "v": uniform(pool, KV_RANGE),
            "table": torch.tensor(rows, dtype=torch.int32, device=device),
            "lengths": torch.tensor(lens, dtype=torch.int32, device=device)}


def reference(problem, x):
    """f32 attention of each sequence over its own pages, gathered through the table."""
    q, k, v, table, lens = x["q"], x["k"], x["v"], x["table"], x["lengths"].tolist()
    seqs, q_heads, d = q.shape
    kv_heads, page = k.shape[1], k.shape[2]
    group = q_heads // kv_heads
    out = torch.empty((seqs, q_heads, d), dtype=torch.float32, device=q.device)
    for b, n in enumerate(lens):
        pages = table[b, :-(-n // page)].long()
        # [pages, kv_heads, page, d] -> [kv_heads, tokens, d], cut to the sequence's length
        kb = k[pages].float().permute(1, 0, 2, 3).reshape(kv_heads, -1, d)[:, :n]
        vb = v[pages].float().permute(1, 0, 2, 3).reshape(kv_heads, -1, d)[:, :n]
        qb = q[b].float().reshape(kv_heads, group, d)
        s = torch.softmax(qb @ kb.transpose(1, 2) / math.sqrt(d), dim=-1)
        out[b] = (s @ vb).reshape(q_heads, d)
    return out


# --- the kernels ---------------------------------------------------------------------------------

if triton is not None:
    @triton.jit
    def paged_decode_kernel(q_ptr, k_ptr, v_ptr, table_ptr, lens_ptr, out_ptr, part_ptr, lse_ptr, num_kv_heads,
                            max_pages, qk_scale, GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, PAGE: tl.constexpr,
                            KV_PAGES: tl.constexpr, QPB: tl.constexpr, QROWS: tl.constexpr, SPLITS: tl.constexpr,
                            DOT: tl.constexpr):
        BLOCK_N: tl.constexpr = KV_PAGES * PAGE
        seq = tl.program_id(0)
        kv_head = tl.program_id(1) // (GROUP // QPB)
        q_head0 = kv_head * GROUP + (tl.program_id(1) % (GROUP // QPB)) * QPB
        split = tl.program_id(2)
        num_q_heads = num_kv_heads * GROUP
        length = tl.load(lens_ptr + seq)
        # The split's blocks: a sequence's blocks cut into SPLITS even runs (a short one leaves some empty).
        blocks = tl.cdiv(length, BLOCK_N)
        per_split = tl.cdiv(blocks, SPLITS)
        b0 = split * per_split
        b1 = tl.minimum(b0 + per_split, blocks)

        rows = tl.arange(0, QROWS)
        d = tl.arange(0, HEAD_DIM)
        head_rows = (seq * num_q_heads + q_head0 + rows).to(tl.int64)
        row_ok = rows < QPB
        q = tl.load(q_ptr + head_rows[:, None] * HEAD_DIM + d[None, :], mask=row_ok[:, None], other=0.0)
        m = tl.full([QROWS], float("-inf"), tl.float32)
        l = tl.zeros([QROWS], tl.float32)
        acc = tl.zeros([QROWS, HEAD_DIM], tl.float32)
        n = tl.arange(0, BLOCK_N)
        table_row = table_ptr + seq.to(tl.int64) * max_pages
        page_stride = num_kv_heads * (PAGE * HEAD_DIM)
        head_off = kv_head * (PAGE * HEAD_DIM) + (n % PAGE) * HEAD_DIM  # within a page, per token of the block
        for blk in range(b0, b1):
            t = blk * BLOCK_N + n
            valid = t < length
            page = tl.load(table_row + t // PAGE, mask=valid, other=0)
            rows_at = page.to(tl.int64) * page_stride + head_off
            offs = rows_at[:, None] + d[None, :]
            k = tl.load(k_ptr + offs, mask=valid[:, None], other=0.0)
            v = tl.load(v_ptr + offs, mask=valid[:, None], other=0.0)
            if DOT:
                s = tl.dot(q, tl.trans(k))
            else:  # one q head: scores as a broadcast multiply and a sum over head_dim
                s = tl.sum(q.to(tl.float32) * k.to(tl.float32), 1)[None, :]
            s = tl.where(valid[None, :], s * qk_scale, float("-inf"))
            m_new = tl.maximum(m, tl.max(s, 1))
            alpha = tl.exp2(m - m_new)
            p = tl.exp2(s - m_new[:, None])
            l = l * alpha + tl.sum(p, 1)
            if DOT:
                acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
            else:
                acc = acc * alpha[:, None] + tl.sum(tl.sum(p, 0)[:, None] * v.to(tl.float32), 0)[None, :]
            m = m_new

        some = l > 0  # an empty split (past a short sequence's end) leaves m = -inf, l = 0
        o = acc / tl.where(some, l, 1.0)[:, None]
        if SPLITS == 1:
            tl.store(out_ptr + head_rows[:, None] * HEAD_DIM + d[None, :], o.to(out_ptr.dtype.element_ty),
                     mask=row_ok[:, None])
        else:
            slot = head_rows * SPLITS + split
            tl.store(part_ptr + slot[:, None] * HEAD_DIM + d[None, :], o, mask=row_ok[:, None])
            tl.store(lse_ptr + slot, tl.where(some, m + tl.log2(l), float("-inf")), mask=row_ok)

    @triton.jit
    def merge_splits_kernel(part_ptr, lse_ptr, out_ptr, HEAD_DIM: tl.constexpr, SPLITS: tl.constexpr):
        """out of one (sequence, q head): its splits' partial outputs weighted by 2^(lse - max lse)."""
        row = tl.program_id(0).to(tl.int64)
        s = tl.arange(0, SPLITS)
        d = tl.arange(0, HEAD_DIM)
        lse = tl.load(lse_ptr + row * SPLITS + s)
        w = tl.exp2(lse - tl.max(lse, 0))  # split 0 is never empty: the max is finite
        part = tl.load(part_ptr + (row * SPLITS + s)[:, None] * HEAD_DIM + d[None, :])
        o = tl.sum(w[:, None] * part, 0) / tl.sum(w, 0)
        tl.store(out_ptr + row * HEAD_DIM + d, o.to(out_ptr.dtype.element_ty))


class Launch:
    """One config over the workload `x`: compile() compiles it without running anything (prepare
    threads must not launch while a measure runs), a call runs it and returns its output. The
    buffers are made at the first call (the measurer's thread), the output NaN-filled, so that a
    config that writes nothing fails validation."""

    def __init__(self, config, problem, x):
        p, c = problem, config
        self.config, self.x, self.buffers = config, x, None
        self.seqs, self.q_heads, kv_heads, self.d = p["num_sequences"], p["num_q_heads"], p["num_kv_heads"], p["head_dim"]
        group, qpb, self.splits = self.q_heads // kv_heads, c["q_heads_per_block"], c["kv_splits"]
        self.grid = (self.seqs, kv_heads * (group // qpb), self.splits)
        self.scalars = (kv_heads, x["table"].shape[1], math.log2(math.e) / math.sqrt(self.d))
        self.meta = dict(GROUP=group, HEAD_DIM=self.d, PAGE=p["page_size"], KV_PAGES=c["kv_pages_per_block"],
                         QPB=qpb, QROWS=max(16, triton.next_power_of_2(qpb)) if c["dot"] else 1, SPLITS=self.splits,
                         DOT=c["dot"], num_warps=c["num_warps"], num_stages=c["num_stages"])

    def args(self, out, part, lse):
        x = self.x
        return (x["q"], x["k"], x["v"], x["table"], x["lengths"], out, part, lse) + self.scalars

    def compile(self):
        f32 = self.x["f32"]  # stands for the f32 buffers: a kernel is compiled for its arguments' types
        paged_decode_kernel.warmup(*self.args(self.x["q"], f32, f32), grid=self.grid, **self.meta)
        if self.splits > 1:
            merge_splits_kernel.warmup(f32, f32, self.x["q"], HEAD_DIM=self.d, SPLITS=self.splits, num_warps=1,
                                       grid=(1,))

    def __call__(self):
        if self.buffers is None:
            q = self.x["q"]
            partial = self.seqs * self.q_heads * self.splits if self.splits > 1 else 1
            self.buffers = (torch.full_like(q, float("nan")),
                            torch.empty((partial * self.d,), dtype=torch.float32, device=q.device),
                            torch.empty((partial,), dtype=torch.float32, device=q.device))
        out, part, lse = self.buffers
        paged_decode_kernel[self.grid](*self.args(out, part, lse), **self.meta)
        if self.splits > 1:
            merge_splits_kernel[(self.seqs * self.q_heads,)](part, lse, out, HEAD_DIM=self.d, SPLITS=self.splits,
                                                            num_warps=1)
        return out


def inputs(problem, seed):
    x = workload(problem, seed, "cuda")
    x["f32"] = torch.empty((16,), dtype=torch.float32, device="cuda")
    return x


def build(config, problem, x):
    launch = Launch(config, problem, x)
    launch.compile()  # here, on a prepare thread
    return launch


def family(space):
    spec, fields = spec_family()
    return kw.Family(
        name=spec["name"], key_fields=fields, bucket_field=spec["bucket_field"], flops=spec["flops"],
        bytes=spec["bytes"], space=space, constraints=CONSTRAINTS, **{k: spec[k] for k in SHARDING if k in spec},
        description="Triton paged decode attention (examples/workers/triton_paged_decode.py): " + spec["description"],
        inputs=inputs, reference=reference, build=build, compare=compare, timer=GraphTimer(), tolerance=TOLERANCE)


def allowed(config, problem):
    """Whether CONSTRAINTS admit `config` for `problem` (ktune's expressions, read as Python)."""
    names = {**{k: v for k, v in problem.items() if isinstance(v, int)}, **config, "mod": lambda a, b: a % b}
    return all(eval(c.replace("&&", " and ").replace("||", " or "), {"__builtins__": {}}, names) for c in CONSTRAINTS)


def configs(space, problem):
    """The configs of `space` that CONSTRAINTS admit for `problem`."""
    return triton_common.admitted(space, lambda c: allowed(c, problem))


if __name__ == "__main__":
    args, space = parse_args(sys.argv[1:])
    triton_common.serve("triton_paged_decode.py", args, lambda: family(space), device, f32_products=False)
