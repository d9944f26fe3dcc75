#!/usr/bin/env python3
"""A ktune worker for aiter's block-scaled 8-bit GEMM in Triton: the CPU family `gemm_a8w8_blockscale`
(its key `M N K q_dtype out_dtype`, costs and scale layout) as a Triton kernel shaped as aiter's
`_gemm_a8w8_blockscale_kernel` is, tuned over aiter's parameters (BLOCK_SIZE_M/N/K, GROUP_SIZE_M,
num_warps, num_stages, NUM_KSPLIT, cache_modifier; waves_per_eu and kpack on AMD), so that `ktune
registry export --format aiter` writes files aiter's loader reads.

    ktune tune --worker "python3 examples/workers/triton_a8w8_blockscale.py" --strategy random --time-budget 60s \\
      --shape "M=16,128,1024 N=4096 K=4096 q_dtype=fp8_e4m3" --run-name a8w8
    ktune apply tuning_runs/a8w8
    ktune registry export --format aiter --family-from tuning_runs/a8w8 --arch gfx942 -o aiter_configs/

The problem (the CPU family's): A_q [M, K] and B_q [N, K] are 8-bit codes (q_dtype fp8_e4m3:
torch.float8_e4m3fn; int8), a_scale [M, K/128] one f32 per 1x128 block of A, b_scale [ceil(N/128),
K/128] one per 128x128 block of B (DeepSeek-V3's recipe), and C[m, n] = sum over K blocks kb of
(A_q[m, kb] . B_q[n, kb]) * a_scale[m, kb] * b_scale[n / 128, kb], bf16 (aiter's default) or f32.
K must be a multiple of 128 (a shape rule); N need not be.

The workload mirrors the CPU family's (core/backends/cpu/src/a8w8_workload.cpp) draw for draw: the
same counter-based generator (splitmix64 of seed ^ i * 0xD1B54A32D192ED03, bench/cuda/moe_routing.py,
pinned against the C++), here in torch int64 arithmetic on the device; per block one draw for its
magnitude 2^u(-4, 4), then its values m * u(-1, 1) row by row; scale = max|x| / 127 (int8, codes
rounded half to even and clamped to [-127, 127]) or / 448 (e4m3 "fn", the nearest code, even on a
tie, by the CPU's table: not torch's cast); A from the workload seed, B from seed ^
0x9e3779b97f4a7c15. So a seed is the CPU family's operands, except where the magnitude's exp2 (here
exp2 in f64 rounded to f32, the C++ exp2f) differs in its last bit. torch's own RNG is not used.
Each config is validated against the dequantized product computed by torch in f32 (codes times
their scales, one matmul; TF32 off) with the run's tolerance (--atol, --rtol, --max-mismatch).

The kernel, after aiter's: a program per BLOCK_SIZE_M x BLOCK_SIZE_N tile of C (and per K split),
tiles taken in GROUP_SIZE_M-row groups for L2 reuse; each 128-deep K step is one tl.dot of the
codes (f32 for e4m3, int32 for int8) scaled by the rows' a_scale and the tile's b_scale and added
to an f32 accumulator. BLOCK_SIZE_K is the scale block (aiter asserts GROUP_K == BLOCK_SIZE_K), and
BLOCK_SIZE_N divides 128, so a tile reads one weight scale per K step (aiter broadcasts a vector of
them). NUM_KSPLIT > 1 splits the K blocks evenly (it must divide K / 128, so that a split starts at
a scale block): each split writes f32 partials and a second kernel sums them into C, timed with
it. cache_modifier is the B (weight) loads' (aiter's; ".cg": L2 only). On AMD (device property
amd, from torch.version.hip) waves_per_eu and kpack reach the launch as aiter passes them; on
NVIDIA they stay at their first value (a constraint), which the export then holds.

Timing: CUDA graphs (triton_common.GraphTimer): per_launch single cold launches (an L2 flush
first), amortized ones back to back. Each trial records `speedup_vs_scaled_mm`: torch._scaled_mm's
time over the config's median, with blockwise scales (1x128 for A, 128x128 for B: cuBLASLt's
block-scaled fp8 GEMM, CUDA 12.9 and a torch that has it) where this torch runs it, else the
per-tensor one (`scaled_mm_baseline`: 1 blockwise, 0 per-tensor), and each baseline's time
(`scaled_mm_blockwise_us`, `scaled_mm_tensorwise_us`). int8 has no _scaled_mm: its baseline is
torch._int_mm with one scale applied after (`int_mm_us`, `speedup_vs_int_mm`). The baselines are
timed once per problem in this process as the configs are (the same graphs and sample counts); a
baseline this torch cannot run is said once on stderr with torch's reason and left out.

Accumulation: on NVIDIA, Triton's fp8 tl.dot adds products in the tensor cores' reduced precision
by default on sm_90 (max_num_imprecise_acc), which on the H100 put 0.3 % of the outputs outside
ktune's default tolerance (atol 0.01 + rtol 0.01, outputs up to ~5,000) for every wgmma tile
(BLOCK_SIZE_M >= 64 with 4 or more warps), while mma.sync tiles passed. This worker asks for full
f32 promotion (max_num_imprecise_acc=0), which costs about 2x on those tiles; --fast-accum gives the
hardware's default back (tune it with --max-mismatch 0.005), as torch._scaled_mm's use_fast_accum.

Flags narrow the space: --block-size-m, --block-size-n, --block-size-k, --group-size-m, --num-warps,
--num-stages, --num-ksplit, --waves-per-eu, --kpack (comma-separated numbers), --cache-modifier
(comma-separated, "" or none for no modifier, e.g. --cache-modifier none,.cg).
"""
import os
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, HERE)
import ktune_worker as kw  # noqa: E402
from triton_common import GraphTimer, compare  # noqa: E402
import triton_common  # noqa: E402

# torch, triton and tl are None where not importable: the GPU parts need them; the rest
# (flags, the family) is plain Python.
from triton_common import tl, torch, triton  # noqa: E402

SCALE_BLOCK = 128  # DeepSeek-V3's: 1x128 blocks of A, 128x128 of B

# Candidates of each parameter, in the order ktune measures them (the first is the default):
# aiter's tuning guide and its A8W8_BLOCKSCALE config files.
SPACE = {
    "BLOCK_SIZE_M": [64, 32, 128],
    "BLOCK_SIZE_N": [128, 32, 64],
    "BLOCK_SIZE_K": [128],
    "GROUP_SIZE_M": [1, 8, 16],
    "num_warps": [4, 2, 8],
    "num_stages": [2, 1, 3, 4],
    "NUM_KSPLIT": [1, 2, 4],
    "cache_modifier": ["", ".cg"],
    "waves_per_eu": [2, 4, 8],  # AMD only
    "kpack": [2, 1],  # AMD only
}
AMD_ONLY = ("waves_per_eu", "kpack")
CONSTRAINTS = [
    {"expr": "BLOCK_SIZE_K == 128",
     "description": "a K step is one scale block (aiter asserts GROUP_K == BLOCK_SIZE_K)"},
    {"expr": "mod(128, BLOCK_SIZE_N) == 0",
     "description": "a tile's columns lie in one 128-row block of B, so one weight scale per K step"},
    {"expr": "mod(K / 128, NUM_KSPLIT) == 0",
     "description": "NUM_KSPLIT divides the K blocks: each split starts at a scale block, with as many as the others"},
    {"expr": "NUM_KSPLIT == 1 || GROUP_SIZE_M == 1",
     "description": "split-K programs walk the tiles in row order (as aiter's): GROUP_SIZE_M changes nothing there"},
    {"expr": "GROUP_SIZE_M == 1 || M > BLOCK_SIZE_M",
     "description": "one row of tiles: every GROUP_SIZE_M orders them alike"},
    {"expr": "amd == 1 || (waves_per_eu == 2 && kpack == 2)",
     "description": "waves_per_eu and kpack are AMD launch options: fixed at their defaults elsewhere"},
    {"expr": "num_stages * 128 * (BLOCK_SIZE_M + BLOCK_SIZE_N) <= smem_per_block",
     "description": "the stages of 8-bit A and B tiles fit the shared memory (LDS on AMD) of a block"},
]
FLAGS = {"--" + name.lower().replace("_", "-"): name for name in SPACE}  # --block-size-m, --cache-modifier, ...
BASELINE_SAMPLES = 5  # a baseline's time: the median of this many samples at least (of --min-samples if more)

# The CPU family's key and costs (core/backends/cpu/src/gemm_a8w8_blockscale_family.cpp).
KEY_FIELDS = [
    {"name": "M", "help": "rows of A and Y (tokens)"},
    {"name": "N", "help": "rows of W, columns of Y (output features)"},
    {"name": "K", "help": "columns of A and W (input features), a multiple of 128"},
    {"name": "q_dtype", "numeric": False, "default": "fp8_e4m3", "choices": ["fp8_e4m3", "int8"],
     "help": "type of the A and W codes"},
    {"name": "out_dtype", "numeric": False, "default": "bf16", "choices": ["bf16", "f32"],
     "help": "type of Y (bf16 rounded to nearest even from f32)"},
]
FLOPS = "2*M*N*K"
BYTES = "M*K + N*K + 4*M*K/128 + 4*ceil(N/128)*K/128 + (out_dtype == \"bf16\" ? 2 : 4)*M*N"
SHAPE_RULES = [{"expr": "mod(K, 128) == 0",
                "description": "K must be a multiple of 128 (one scale per 1x128 block of A and 128x128 block of W): "
                               "pad K with zero codes"}]


def parse_args(argv):
    """The worker's flags: each narrows one parameter to the listed values (which must be candidates).
    `--device I` is the one ktune appends with --devices."""
    return triton_common.parse_space("triton_a8w8_blockscale.py", __doc__, argv, SPACE, FLAGS, _values, _shown,
                                     more=_fast_accum_flag)


def _fast_accum_flag(parser):
    parser.add_argument("--fast-accum", action="store_true",
                        help="NVIDIA fp8: let each tl.dot accumulate in the tensor cores' reduced precision "
                             "(Triton's default on sm_90, about 2x faster on wgmma tiles), which puts about 0.3%% "
                             "of the outputs outside ktune's default tolerance: tune with --max-mismatch 0.005")


def _shown(param):
    return ",".join(v if v else "none" for v in SPACE[param]) if param == "cache_modifier" else \
        ",".join(map(str, SPACE[param]))


def _values(parser, flag, param, given):
    """A flag's comma-separated values (whole numbers, or cache modifiers where "" and "none" are no
    modifier)."""
    if param == "cache_modifier":
        return ["" if v.lower() in ("", "none") else v for v in given.split(",")]
    try:
        return [int(v) for v in given.split(",")]
    except ValueError:
        parser.error(f"{flag} {given!r}: expected comma-separated whole numbers, e.g. {flag} 64,128")


# --- the workload: the CPU family's generator in torch int64 arithmetic ---------------------------

MASK64 = (1 << 64) - 1
A_STREAM, B_STREAM = 0, 0x9E3779B97F4A7C15  # A from the seed, B from seed ^ this (the CPU session's)
E4M3_MAX = 448.0
CHUNK = 1 << 24  # elements drawn at a time: bounds the int64 temporaries


def _signed(c):
    """A 64-bit pattern as the int64 torch holds it."""
    c &= MASK64
    return c - (1 << 64) if c >= 1 << 63 else c


def _srl(x, s):
    """x >> s of the uint64 pattern x holds (torch's >> on int64 is arithmetic)."""
    return (x >> s) & ((1 << (64 - s)) - 1)


def unit_draws(seed, index):
    """ktune's unit_draw(seed, i) for an int64 tensor of draw indices, as float64 in [0, 1): splitmix64
    wraps mod 2^64 as torch's int64 products and sums do."""
    x = index * _signed(0xD1B54A32D192ED03)
    x = (x ^ _signed(seed)) + _signed(0x9E3779B97F4A7C15)
    x = (x ^ _srl(x, 30)) * _signed(0xBF58476D1CE4E5B9)
    x = (x ^ _srl(x, 27)) * _signed(0x94D049BB133111EB)
    x = x ^ _srl(x, 31)
    return _srl(x, 11).double() * 2.0 ** -53


def e4m3_table(device="cpu"):
    """The value of each non-negative e4m3fn code 0x00..0x7e (0x7f is NaN), increasing with the code."""
    codes = torch.arange(0x7F, device=device)
    e, m = (codes >> 3).double(), (codes & 7).double()
    return torch.where(e == 0, m / 8 * 2.0 ** -6, (1 + m / 8) * torch.exp2(e - 7))


def e4m3_encode(v):
    """The CPU's e4m3_encode of f32 `v` as uint8 codes: the nearest code, the even one on a tie, |v| >= 448 the
    largest; the sign bit from v's sign (so -0.0 is 0x80)."""
    table = e4m3_table(v.device)
    a = v.abs().double().clamp(max=E4M3_MAX)
    hi = torch.searchsorted(table, a).clamp(1, 0x7E)  # table[hi - 1] < a <= table[hi], or the ends
    lo = hi - 1
    d_lo, d_hi = a - table[lo], table[hi] - a
    code = torch.where(d_lo < d_hi, lo, torch.where(d_hi < d_lo, hi, torch.where(lo % 2 == 0, lo, hi)))
    return (code | torch.signbit(v).long() * 0x80).to(torch.uint8)


def e4m3_decode(codes):
    """f32 values of uint8 e4m3fn codes (0x7f, 0xff: NaN)."""
    table = torch.cat([e4m3_table(codes.device), torch.tensor([float("nan")], dtype=torch.float64,
                                                              device=codes.device)])
    c = codes.long()
    return (table[c & 0x7F] * (1 - 2 * (c >> 7)).double()).float()


def quantize_random(q_dtype, rows, cols, block_rows, seed, device="cpu"):
    """(codes [rows, cols] uint8 (int8 codes as their bytes), scales [ceil(rows / block_rows), cols / 128] f32)
    of core/backends/cpu/src/a8w8_workload.cpp's quantize_random: block (br, bc)'s stream starts at draw
    n0 = br * bcols * (1 + block_rows * 128) + bc * (1 + h * 128), h its rows (the last block row may be
    short); draw n0 is its magnitude, n0 + 1 + r * 128 + k its row r's value k."""
    bcols, brows = cols // SCALE_BLOCK, -(-rows // block_rows)
    qmax = 127.0 if q_dtype == "int8" else E4M3_MAX
    codes = torch.empty(rows, cols, dtype=torch.uint8, device=device)
    scales = torch.empty(brows, bcols, dtype=torch.float32, device=device)
    step = max(1, CHUNK // (block_rows * cols))  # block rows a chunk
    for br0 in range(0, brows, step):
        br1 = min(brows, br0 + step)
        r0, r1 = br0 * block_rows, min(rows, br1 * block_rows)
        r = torch.arange(r0, r1, device=device)
        br, h = r // block_rows, torch.clamp(rows - (r // block_rows) * block_rows, max=block_rows)
        c = torch.arange(cols, device=device)
        n0 = (br * bcols * (1 + block_rows * SCALE_BLOCK))[:, None] + (c // SCALE_BLOCK)[None, :] * (
            1 + h * SCALE_BLOCK)[:, None]
        magnitude = torch.exp2((-4.0 + 8.0 * unit_draws(seed, n0)).float().double()).float()  # exp2f(u(-4, 4))
        value = (-1.0 + 2.0 * unit_draws(seed, n0 + 1 + ((r - br * block_rows) * SCALE_BLOCK)[:, None]
                                         + (c % SCALE_BLOCK)[None, :])).float()
        x = magnitude * value
        blocks = torch.zeros((br1 - br0) * block_rows, cols, dtype=torch.float32, device=device)
        blocks[:r1 - r0] = x.abs()
        amax = blocks.view(br1 - br0, block_rows, bcols, SCALE_BLOCK).amax(dim=(1, 3))
        scale = torch.where(amax > 0, amax / qmax, torch.ones_like(amax))
        scales[br0:br1] = scale
        v = x / scale.repeat_interleave(block_rows, 0)[:r1 - r0].repeat_interleave(SCALE_BLOCK, 1)
        if q_dtype == "int8":
            codes[r0:r1] = torch.round(v).clamp(-127, 127).to(torch.int8).view(torch.uint8)
        else:
            codes[r0:r1] = e4m3_encode(v)
    return codes, scales


def dequantize(q_dtype, codes, scales, block_rows):
    """f32 code * scale of each element."""
    values = codes.view(torch.int8).float() if q_dtype == "int8" else e4m3_decode(codes)
    s = scales.repeat_interleave(block_rows, 0)[:codes.shape[0]].repeat_interleave(SCALE_BLOCK, 1)
    return values * s


def workload(problem, seed, device="cuda"):
    """The problem's operands: a / b the codes as uint8 bytes, a_scale [M, K/128], b_scale [ceil(N/128), K/128]."""
    M, N, K, q = problem["M"], problem["N"], problem["K"], problem.get("q_dtype", "fp8_e4m3")
    a, a_scale = quantize_random(q, M, K, 1, seed ^ A_STREAM, device)
    b, b_scale = quantize_random(q, N, K, SCALE_BLOCK, (seed ^ B_STREAM) & MASK64, device)
    return {"q_dtype": q, "a_bytes": a, "b_bytes": b, "a_scale": a_scale, "b_scale": b_scale}


def reference(problem, x):
    """The dequantized product in f32 (one torch matmul), as the CPU family's f64 reference rounds to f32."""
    q = x["q_dtype"]
    a = dequantize(q, x["a_bytes"], x["a_scale"], 1)
    b = dequantize(q, x["b_bytes"], x["b_scale"], SCALE_BLOCK)
    return a @ b.t()


def codes(x):
    """The operands as the kernels read them: int8, or float8_e4m3fn (a view of the same bytes)."""
    kind = torch.int8 if x["q_dtype"] == "int8" else torch.float8_e4m3fn
    return x["a_bytes"].view(kind), x["b_bytes"].view(kind)


# --- the kernels ---------------------------------------------------------------------------------

if triton is not None:
    @triton.jit
    def a8w8_blockscale_kernel(a_ptr, b_ptr, c_ptr, a_scale_ptr, b_scale_ptr, M, N, K,
                               BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                               GROUP_SIZE_M: tl.constexpr, NUM_KSPLIT: tl.constexpr, cache_modifier: tl.constexpr,
                               MAX_IMPRECISE_ACC: tl.constexpr = None):
        """C tile (pid_m, pid_n) = sum over this split's K blocks kb of dot(A[m, kb], B[n, kb]^T) * a_scale[m, kb]
        * b_scale[n / 128, kb]; with NUM_KSPLIT > 1, c_ptr is f32 partials [NUM_KSPLIT, M, N]."""
        tl.static_assert(BLOCK_SIZE_K == 128, "a K step is one scale block")
        tl.static_assert(128 % BLOCK_SIZE_N == 0, "a tile's columns share one weight scale")
        pid, pid_k = tl.program_id(0), tl.program_id(1)
        tiles_m, tiles_n = tl.cdiv(M, BLOCK_SIZE_M), tl.cdiv(N, BLOCK_SIZE_N)
        if NUM_KSPLIT == 1:  # GROUP_SIZE_M rows of tiles at a time: programs running together share B tiles
            per_group = GROUP_SIZE_M * tiles_n
            first_m = (pid // per_group) * GROUP_SIZE_M
            rows = tl.minimum(tiles_m - first_m, GROUP_SIZE_M)
            pid_m = first_m + (pid % per_group) % rows
            pid_n = (pid % per_group) // rows
        else:
            pid_m, pid_n = pid // tiles_n, pid % tiles_n
        kbs = K // BLOCK_SIZE_K
        per_split = kbs // NUM_KSPLIT
        rm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
        rn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        rk = tl.arange(0, BLOCK_SIZE_K)
        m_ok, n_ok = rm < M, rn < N
        a_ptrs = a_ptr + rm.to(tl.int64)[:, None] * K + rk[None, :]
        b_ptrs = b_ptr + rn.to(tl.int64)[None, :] * K + rk[:, None]  # B^T's [BLOCK_SIZE_K, BLOCK_SIZE_N] tile
        a_scale_ptrs = a_scale_ptr + rm * kbs
        b_scale_row = b_scale_ptr + (pid_n * BLOCK_SIZE_N // 128) * kbs
        acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for kb in range(pid_k * per_split, (pid_k + 1) * per_split):
            a = tl.load(a_ptrs + kb * BLOCK_SIZE_K, mask=m_ok[:, None], other=0.0)
            b = tl.load(b_ptrs + kb * BLOCK_SIZE_K, mask=n_ok[None, :], other=0.0, cache_modifier=cache_modifier)
            a_s = tl.load(a_scale_ptrs + kb, mask=m_ok, other=0.0)
            b_s = tl.load(b_scale_row + kb)
            acc += tl.dot(a, b, max_num_imprecise_acc=MAX_IMPRECISE_ACC).to(tl.float32) * (a_s[:, None] * b_s)
        out = c_ptr + pid_k.to(tl.int64) * M * N + rm.to(tl.int64)[:, None] * N + rn[None, :]
        tl.store(out, acc.to(c_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])

    @triton.jit
    def splitk_reduce_kernel(partial_ptr, c_ptr, MN, NUM_KSPLIT: tl.constexpr, BLOCK: tl.constexpr):
        """C = the sum of the NUM_KSPLIT f32 partials [NUM_KSPLIT, M, N], in C's type."""
        offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        ok = offs < MN
        total = tl.zeros((BLOCK,), dtype=tl.float32)
        for k in tl.static_range(NUM_KSPLIT):
            total += tl.load(partial_ptr + k * MN + offs, mask=ok, other=0.0)
        tl.store(c_ptr + offs, total.to(c_ptr.dtype.element_ty), mask=ok)
else:  # what Launch names, so that its torch side can be exercised without Triton (tests/python)
    a8w8_blockscale_kernel = splitk_reduce_kernel = None

REDUCE_BLOCK = 1024


class Launch:
    """One config over the workload `x`: compile() compiles both kernels without running anything (prepare
    threads must not launch while a measure runs); a call runs them and returns C. The buffers are made at
    the first call (the measurer's thread), C NaN-filled, so that a config that writes nothing fails."""

    def __init__(self, config, problem, x, amd=False, fast_accum=False):
        c, p = config, problem
        self.x, self.buffers = x, None
        self.M, self.N, self.K = p["M"], p["N"], p["K"]
        self.out_dtype = {"bf16": torch.bfloat16, "f32": torch.float32}[p.get("out_dtype", "bf16")]
        self.split = c["NUM_KSPLIT"]
        self.meta = dict(BLOCK_SIZE_M=c["BLOCK_SIZE_M"], BLOCK_SIZE_N=c["BLOCK_SIZE_N"],
                         BLOCK_SIZE_K=c["BLOCK_SIZE_K"], GROUP_SIZE_M=c["GROUP_SIZE_M"], NUM_KSPLIT=self.split,
                         cache_modifier=c["cache_modifier"], num_warps=c["num_warps"], num_stages=c["num_stages"])
        if amd:  # Triton's AMD launch options, as aiter passes them
            self.meta.update(waves_per_eu=c["waves_per_eu"], kpack=c["kpack"])
        elif x["q_dtype"] == "fp8_e4m3" and not fast_accum:
            # Hopper's fp8 wgmma adds products in reduced precision unless told otherwise (Triton's
            # default there): promoting every product to f32 keeps each output within tolerance.
            self.meta.update(MAX_IMPRECISE_ACC=0)
        tiles = -(-self.M // c["BLOCK_SIZE_M"]) * -(-self.N // c["BLOCK_SIZE_N"])
        self.grid = (tiles, self.split)
        self.reduce_grid = (-(-self.M * self.N // REDUCE_BLOCK),)

    def args(self, target):
        a, b = codes(self.x)
        return (a, b, target, self.x["a_scale"], self.x["b_scale"], self.M, self.N, self.K)

    def compile(self):
        device = self.x["a_scale"].device
        stand_in = torch.empty(1, dtype=torch.float32 if self.split > 1 else self.out_dtype, device=device)
        a8w8_blockscale_kernel.warmup(*self.args(stand_in), grid=self.grid, **self.meta)
        if self.split > 1:
            out = torch.empty(1, dtype=self.out_dtype, device=device)
            splitk_reduce_kernel.warmup(stand_in, out, self.M * self.N, NUM_KSPLIT=self.split, BLOCK=REDUCE_BLOCK,
                                        grid=self.reduce_grid)

    def allocate(self):
        device = self.x["a_scale"].device
        b = {"out": torch.full((self.M, self.N), float("nan"), dtype=self.out_dtype, device=device)}
        if self.split > 1:
            b["partial"] = torch.empty((self.split, self.M, self.N), dtype=torch.float32, device=device)
        return b

    def __call__(self):
        if self.buffers is None:
            self.buffers = self.allocate()
        b = self.buffers
        if self.split == 1:
            a8w8_blockscale_kernel[self.grid](*self.args(b["out"]), **self.meta)
        else:
            a8w8_blockscale_kernel[self.grid](*self.args(b["partial"]), **self.meta)
            splitk_reduce_kernel[self.reduce_grid](b["partial"], b["out"], self.M * self.N, NUM_KSPLIT=self.split,
                                                   BLOCK=REDUCE_BLOCK)
        return b["out"]


def inputs(problem, seed):
    return workload(problem, seed, "cuda")


def build(config, problem, x, amd=False, fast_accum=False):
    launch = Launch(config, problem, x, amd, fast_accum)
    launch.compile()  # here, on a prepare thread
    return launch


# --- the baselines, for speedup_vs_scaled_mm -----------------------------------------------------

def baselines(problem, x):
    """[(metric, function)] of torch's GEMMs for this problem (their outputs are not checked: timing only).
    fp8: torch._scaled_mm with blockwise scales (A's 1x128 [M, K/128] outer-dim-major, B's 128x128 as
    [K/128, N/128]), then with per-tensor ones; int8: torch._int_mm and one scale to the output type."""
    a, b = codes(x)
    out_dtype = {"bf16": torch.bfloat16, "f32": torch.float32}[problem.get("out_dtype", "bf16")]
    bt = b.t()  # [K, N], column-major: what cuBLASLt's fp8 GEMM takes
    if x["q_dtype"] == "int8":
        one = torch.ones((), dtype=torch.float32, device=a.device)
        return [("int_mm_us", lambda: (torch._int_mm(a, bt) * one).to(out_dtype))]
    a_scale = x["a_scale"].t().contiguous().t()  # [M, K/128] with M fastest
    b_scale = x["b_scale"].t()  # [K/128, ceil(N/128)]
    one = torch.ones((), dtype=torch.float32, device=a.device)
    return [("scaled_mm_blockwise_us", lambda: torch._scaled_mm(a, bt, a_scale, b_scale, out_dtype=out_dtype)),
            ("scaled_mm_tensorwise_us", lambda: torch._scaled_mm(a, bt, one, one, out_dtype=out_dtype))]


def baseline_ns(problem, x, settings, timer):
    """{metric: ns} of each baseline this torch runs, timed once per problem and method as ktune times the
    configs; one that fails is said on stderr (torch's reason) and left out."""
    method = settings.get("method", "amortized")
    times = x.setdefault("baseline_ns", {})
    if method not in times:
        times[method] = {}
        for name, fn in baselines(problem, x):
            ns = _time_baseline(name, fn, method, settings, timer)
            if ns is not None:
                times[method][name] = ns
    return times[method]


def _time_baseline(name, fn, method, settings, timer):
    return triton_common.time_baseline(
        fn, method, settings, timer, BASELINE_SAMPLES,
        f"triton_a8w8_blockscale.py: {name[:-3]}", f"the speedups (torch {torch.__version__})")


def speedup_metrics(times, samples):
    """From the baselines' ns: speedup_vs_scaled_mm over the blockwise one where it ran, else the per-tensor
    one (scaled_mm_baseline says which: 1 / 0), or speedup_vs_int_mm; and each baseline's µs."""
    out = {name: ns / 1e3 for name, ns in times.items()}
    median = statistics.median(samples)
    if "scaled_mm_blockwise_us" in times or "scaled_mm_tensorwise_us" in times:
        blockwise = "scaled_mm_blockwise_us" in times
        ns = times["scaled_mm_blockwise_us" if blockwise else "scaled_mm_tensorwise_us"]
        out.update(speedup_vs_scaled_mm=ns / median, scaled_mm_baseline=float(blockwise))
    if "int_mm_us" in times:
        out["speedup_vs_int_mm"] = times["int_mm_us"] / median
    return out


# --- the family ----------------------------------------------------------------------------------

def is_amd():
    return torch is not None and getattr(torch.version, "hip", None) is not None


def device(index):
    """The hello's device, with what the constraints read: smem_per_block (the opt-in maximum) and amd."""
    smem = triton.runtime.driver.active.utils.get_device_properties(index)["max_shared_mem"]
    return triton_common.device(index, smem_per_block=float(smem), amd=float(is_amd()))


DESCRIPTION = ("aiter's block-scaled 8-bit GEMM in Triton (examples/workers/triton_a8w8_blockscale.py): the CPU "
               "family's key, scales (1x128 for A, 128x128 for B, DeepSeek-V3) and workload; aiter's parameters "
               "(BLOCK_SIZE_M/N/K, GROUP_SIZE_M, num_warps, num_stages, NUM_KSPLIT, cache_modifier; waves_per_eu "
               "and kpack on AMD), exportable with ktune registry export --format aiter; each trial records "
               "speedup_vs_scaled_mm over torch._scaled_mm (blockwise scales where torch has them)")


def family(space, amd=False, fast_accum=False):
    timer = GraphTimer()
    return kw.Family(
        name="gemm_a8w8_blockscale", key_fields=KEY_FIELDS, bucket_field="M", flops=FLOPS, bytes=BYTES,
        space=space, constraints=CONSTRAINTS, tp_out_field="N", tp_in_field="K", shape_rules=SHAPE_RULES,
        description=DESCRIPTION, inputs=inputs, reference=reference, compare=compare, timer=timer,
        build=lambda config, problem, x: build(config, problem, x, amd, fast_accum),
        metrics=lambda problem, x, samples, settings: speedup_metrics(
            baseline_ns(problem, x, settings, timer), samples))


def _python(expr):
    """A ktune expression of CONSTRAINTS as Python: && || as and or, mod(a, b) as a % b, / as true division."""
    expr = expr.replace("&&", " and ").replace("||", " or ")
    return re.sub(r"mod\(([^,]+), ([^)]+)\)", r"((\1) % (\2))", expr)


_RULES = [compile(_python(c["expr"]), c["expr"], "eval") for c in CONSTRAINTS]


def allowed(config, problem, properties):
    """Whether CONSTRAINTS admit `config` for `problem` on a device with these `properties` (amd, smem_per_block)."""
    names = {**problem, **config, **properties}
    return all(eval(rule, {"__builtins__": {}}, names) for rule in _RULES)


def configs(space, problem, properties):
    """The configs of `space` that CONSTRAINTS admit for `problem` on that device."""
    return triton_common.admitted(space, lambda c: allowed(c, problem, properties))


if __name__ == "__main__":
    args, space = parse_args(sys.argv[1:])
    triton_common.serve("triton_a8w8_blockscale.py", args, lambda: family(space, is_amd(), args.fast_accum), device,
                        gpu="a GPU")
