#include "a8w8.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "ktune/measurement.h"
#include "low_precision.h"

namespace ktune::cpu {

bool cpu_has_avx512_vnni() { return isa_level() >= IsaLevel::Avx512Vnni; }

const A8UKernelSet* a8_ukernels_for(int lanes, bool vnni) {
#if defined(__x86_64__) || defined(__i386__)
  if (lanes == 16 && vnni) return cpu_has_avx512_vnni() ? &a8_ukernels_avx512_vnni() : nullptr;
  if (lanes == 16) return ukernels_for(16) ? &a8_ukernels_avx512() : nullptr;
  if (lanes == 8 && !vnni) return ukernels_for(8) ? &a8_ukernels_avx2() : nullptr;
#endif
  if (lanes == 4 && !vnni) return &a8_ukernels_portable();
  return nullptr;
}

namespace {

std::size_t align64(std::size_t n) { return (n + 63) / 64 * 64; }

// Pointers into one thread's workspace, laid out by A8Plan::workspace_bytes_per_thread().
struct Workspace {
  unsigned char* a;    // packed A block
  float* a_scale;      // int8: [panel][kb][MR]
  std::int32_t* asum;  // int8: [panel][kb][MR]
  unsigned char* w;    // packed W panel
  float* block;        // bf16 outputs: the f32 block_rows x NC accumulator
  float* edge;         // an MR x NR tile at the edges

  Workspace(const A8Plan& p, unsigned char* base) {
    const std::size_t elem = p.q == QType::Int8 ? 1 : sizeof(float);
    const long kb = p.kc / kScaleBlock;
    a = base;
    a_scale = reinterpret_cast<float*>(a + align64(p.mc * p.kc * elem));
    auto* after_scales = reinterpret_cast<unsigned char*>(a_scale) + align64(p.mc * kb * sizeof(float));
    asum = reinterpret_cast<std::int32_t*>(after_scales);
    w = after_scales + align64(p.mc * kb * sizeof(std::int32_t));
    block = reinterpret_cast<float*>(w + align64(p.nc * p.kc * elem));
    edge = block + (p.out == OutType::Bf16 ? align64(p.block_rows * p.nc * sizeof(float)) / sizeof(float) : 0);
  }
};

// Rows [r0, r0 + count) of an 8-bit [rows, K] operand, columns [pc, pc + kc), as the int8
// kernels read them: micro-panels of R rows, [panel][k / 4][R][4 codes], each group XORed with
// `bias`; rows past `count` are zero codes (XORed too). Written in order, read as R streams.
void pack_groups(const std::uint8_t* codes, long K, long r0, long count, long pc, long kc, int R, std::uint32_t bias,
                 unsigned char* dst) {
  for (long p0 = 0; p0 < count; p0 += R) {
    const long live = std::min<long>(R, count - p0);
    const std::uint8_t* src = codes + (r0 + p0) * K + pc;
    for (long g = 0; g < kc / 4; ++g, dst += 4 * R) {
      for (long r = 0; r < live; ++r) {
        std::uint32_t v;
        std::memcpy(&v, src + r * K + 4 * g, 4);
        v ^= bias;
        std::memcpy(dst + 4 * r, &v, 4);
      }
      for (long r = live; r < R; ++r) std::memcpy(dst + 4 * r, &bias, 4);
    }
  }
}

// The same rows for the f32 kernels (gemm.h's layout, [panel][k][R]): e4m3 codes decoded and
// multiplied by their block's scale (`block_rows` rows share a row of scales: 1 for A, 128 for W).
void pack_decoded(const std::uint8_t* codes, const float* scales, long block_rows, long K, long r0, long count, long pc,
                  long kc, int R, float* dst) {
  const long KB = K / kScaleBlock;
  for (long p0 = 0; p0 < count; p0 += R, dst += R * kc)
    for (long r = 0; r < R; ++r) {
      const long row = r0 + p0 + r;
      if (p0 + r >= count) {
        for (long k = 0; k < kc; ++k) dst[k * R + r] = 0.0f;
        continue;
      }
      const std::uint8_t* src = codes + row * K + pc;
      const float* scale = scales + (row / block_rows) * KB + pc / kScaleBlock;
      for (long k = 0; k < kc; ++k) dst[k * R + r] = kE4m3Table[src[k]] * scale[k / kScaleBlock];
    }
}

// int8 A block: codes, and per [panel][kb][MR] the scales and 128 * the row sums (which undo
// the bias on W where the kernel multiplies u8 by s8); zero past the last row.
void pack_a_int8(const A8Plan& p, const A8Operands& op, long ic, long mc, long pc, long kc, Workspace& ws) {
  pack_groups(op.a, op.K, ic, mc, pc, kc, p.MR, 0, ws.a);
  const long KB = op.K / kScaleBlock, kbs = kc / kScaleBlock;
  for (long i = 0; i < (mc + p.MR - 1) / p.MR * p.MR; ++i)
    for (long b = 0; b < kbs; ++b) {
      const long at = (i / p.MR * kbs + b) * p.MR + i % p.MR;
      ws.a_scale[at] = i < mc ? op.a_scale[(ic + i) * KB + pc / kScaleBlock + b] : 0.0f;
      std::int32_t s = 0;
      if (i < mc && p.biased_w) {
        const auto* src = reinterpret_cast<const std::int8_t*>(op.a + (ic + i) * op.K + pc + b * kScaleBlock);
        for (long k = 0; k < kScaleBlock; ++k) s += src[k];
      }
      ws.asum[at] = 128 * s;
    }
}

void pack_w_int8(const A8Plan& p, const A8Operands& op, long jc, long nc, long pc, long kc, Workspace& ws) {
  pack_groups(op.w, op.K, jc, nc, pc, kc, p.NR, p.biased_w ? 0x80808080u : 0, ws.w);
}

// Every micro-tile of the packed (mc x kc) x (kc x nc) pair into c (ldc); `first` stores.
void macro_kernel(const A8Plan& p, const A8Operands& op, long jc, long pc, long mc, long nc, long kc, Workspace& ws,
                  float* c, long ldc, bool first) {
  const long kbs = kc / kScaleBlock, KB = op.K / kScaleBlock;
  const std::size_t elem = p.q == QType::Int8 ? 1 : sizeof(float);
  for (long jr = 0; jr < nc; jr += p.NR)
    for (long ir = 0; ir < mc; ir += p.MR) {
      const long mr = std::min<long>(p.MR, mc - ir), nr = std::min<long>(p.NR, nc - jr);
      const bool full = mr == p.MR && nr == p.NR;
      float* dst = full ? c + ir * ldc + jr : ws.edge;
      const long ldd = full ? ldc : p.NR;
      const bool store = full ? first : true;
      if (p.q == QType::Int8) {
        // A micro-panel never straddles a 128-column weight block: NR divides 128.
        const float* w_scale = op.w_scale + ((jc + jr) / kScaleBlock) * KB + pc / kScaleBlock;
        p.int8_kernel(static_cast<int>(kbs), reinterpret_cast<const std::int8_t*>(ws.a + ir * kc), ws.w + jr * kc,
                      ws.asum + ir * kbs, ws.a_scale + ir * kbs, w_scale, dst, ldd, store);
      } else {
        p.f32_kernel(static_cast<int>(kc), reinterpret_cast<const float*>(ws.a + ir * kc * elem),
                     reinterpret_cast<const float*>(ws.w + jr * kc * elem), dst, ldd, store ? 0.0f : 1.0f);
      }
      if (!full)
        for (long r = 0; r < mr; ++r)
          for (long j = 0; j < nr; ++j) {
            float& out = c[(ir + r) * ldc + jr + j];
            out = first ? ws.edge[r * p.NR + j] : out + ws.edge[r * p.NR + j];
          }
    }
}

// Y[m0:m1, n0:n1] on one thread.
void pack_w(const A8Plan& p, const A8Operands& op, long jc, long nc, long pc, long kc, Workspace& ws) {
  if (p.q == QType::Int8)
    pack_w_int8(p, op, jc, nc, pc, kc, ws);
  else
    pack_decoded(op.w, op.w_scale, kScaleBlock, op.K, jc, nc, pc, kc, p.NR, reinterpret_cast<float*>(ws.w));
}

void pack_a(const A8Plan& p, const A8Operands& op, long ic, long mc, long pc, long kc, Workspace& ws) {
  if (p.q == QType::Int8)
    pack_a_int8(p, op, ic, mc, pc, kc, ws);
  else
    pack_decoded(op.a, op.a_scale, 1, op.K, ic, mc, pc, kc, p.MR, reinterpret_cast<float*>(ws.a));
}

void store_bf16(const float* c, long ldc, long rows, long cols, std::uint16_t* y, long ldy) {
  for (long r = 0; r < rows; ++r)
    for (long j = 0; j < cols; ++j) y[r * ldy + j] = bf16_round(c[r * ldc + j]);
}

// Y[m0:m1, n0:n1] on one thread. f32 outputs accumulate in Y; bf16 ones in the f32 block of
// the workspace (rows from m0 in loop order 0, from ic in 1), rounded once when complete.
void a8w8_block(const A8Plan& p, const A8Operands& op, long m0, long m1, long n0, long n1, Workspace ws,
                StopFlag& stop) {
  const bool bf16 = p.out == OutType::Bf16;
  auto* y16 = static_cast<std::uint16_t*>(op.y);
  auto target = [&](long row0, long ic, long jc) {
    return bf16 ? ws.block + (ic - row0) * p.nc : static_cast<float*>(op.y) + ic * op.N + jc;
  };
  const long ldc = bf16 ? p.nc : op.N;
  for (long jc = n0; jc < n1; jc += p.nc) {
    const long nc = std::min(p.nc, n1 - jc);
    if (p.loop_order == 0) {
      for (long pc = 0; pc < op.K; pc += p.kc) {
        const long kc = std::min(p.kc, op.K - pc);
        pack_w(p, op, jc, nc, pc, kc, ws);
        for (long ic = m0; ic < m1; ic += p.mc) {
          const long mc = std::min(p.mc, m1 - ic);
          pack_a(p, op, ic, mc, pc, kc, ws);
          macro_kernel(p, op, jc, pc, mc, nc, kc, ws, target(m0, ic, jc), ldc, pc == 0);
          if (stop.check()) return;
        }
      }
      if (bf16) store_bf16(ws.block, ldc, m1 - m0, nc, y16 + m0 * op.N + jc, op.N);
    } else {
      for (long ic = m0; ic < m1; ic += p.mc) {
        const long mc = std::min(p.mc, m1 - ic);
        for (long pc = 0; pc < op.K; pc += p.kc) {
          const long kc = std::min(p.kc, op.K - pc);
          pack_w(p, op, jc, nc, pc, kc, ws);
          pack_a(p, op, ic, mc, pc, kc, ws);
          macro_kernel(p, op, jc, pc, mc, nc, kc, ws, target(ic, ic, jc), ldc, pc == 0);
          if (stop.check()) return;
        }
        if (bf16) store_bf16(ws.block, ldc, mc, nc, y16 + ic * op.N + jc, op.N);
      }
    }
  }
}

[[noreturn]] void fail(TrialStatus status, const std::string& msg) { throw TrialFailure(status, msg); }

}  // namespace

std::size_t A8Plan::workspace_bytes_per_thread() const {
  const std::size_t elem = q == QType::Int8 ? 1 : sizeof(float);
  const std::size_t kb = static_cast<std::size_t>(kc / kScaleBlock);
  return align64(mc * kc * elem) + align64(mc * kb * sizeof(float)) + align64(mc * kb * sizeof(std::int32_t)) +
         align64(nc * kc * elem) + (out == OutType::Bf16 ? align64(block_rows * nc * sizeof(float)) : 0) +
         align64(MR * NR * sizeof(float));
}

A8Plan plan_a8w8(const Config& config, QType q, OutType out, long M, int hw_threads, double workspace_limit) {
  const auto v = read_params(config, {"MR", "NR", "vec", "MC", "NC", "KC", "loop_order", "vnni", "threads"},
                             "gemm_a8w8_blockscale");
  for (const auto& [name, value] : v)
    if (name == "vnni" || name == "loop_order" ? value < 0 || value > 1 : value < 1)
      fail(TrialStatus::CompileError,
           "gemm_a8w8_blockscale parameter " + name + "=" + std::to_string(value) + " is out of range");
  A8Plan p;
  p.q = q;
  p.out = out;
  p.MR = static_cast<int>(v.at("MR"));
  p.NR = static_cast<int>(v.at("NR"));
  p.vec = static_cast<int>(v.at("vec"));
  p.threads = static_cast<int>(v.at("threads"));
  p.vnni = v.at("vnni") != 0;
  p.loop_order = static_cast<int>(v.at("loop_order"));
  const std::string tile = "MR=" + std::to_string(p.MR) + " NR=" + std::to_string(p.NR);
  if (p.NR % p.vec != 0 || kScaleBlock % p.NR != 0)
    fail(TrialStatus::CompileError, "gemm_a8w8_blockscale " + tile + ": NR must be whole vectors of vec=" +
                                        std::to_string(p.vec) + " and divide the 128-column scale block");
  const int nv = p.NR / p.vec;
  if (q == QType::Int8) {
    const A8UKernelSet* set = a8_ukernels_for(p.vec, p.vnni);
    if (!set)
      fail(TrialStatus::CompileError,
           "no int8 micro-kernel with vec=" + std::to_string(p.vec) + (p.vnni ? " and vnni" : "") +
               " on this CPU (16 needs AVX-512, 8 AVX2, 4 is portable; vnni needs AVX-512 VNNI and vec=16)");
    if (p.MR > kA8MaxMR || nv > kA8MaxNV || !set->k[p.MR][nv])
      fail(TrialStatus::CompileError, "no int8 micro-kernel for " + tile + " on " + set->isa +
                                          " (MR one of 1 2 4 6 8, NR 1, 2 or 4 vectors, within the register file)");
    p.int8_kernel = set->k[p.MR][nv];
    p.biased_w = set->biased_w;
    p.isa = set->isa;
  } else {
    if (p.vnni)
      fail(TrialStatus::CompileError, "vnni=true applies to int8 only: fp8 e4m3 is decoded to f32 on the CPU");
    const UKernelSet* set = &require_ukernels(p.vec);
    if (p.MR > kMaxMR || nv > kMaxNV || !set->gemm[p.MR][nv])
      fail(TrialStatus::CompileError, "no f32 micro-kernel for " + tile + " on " + set->isa);
    p.f32_kernel = set->gemm[p.MR][nv];
    p.isa = set->isa;
  }
  if (v.at("MC") < p.MR || v.at("NC") < p.NR || v.at("KC") < kScaleBlock)
    fail(TrialStatus::CompileError, "gemm_a8w8_blockscale MC=" + std::to_string(v.at("MC")) + " / NC=" +
                                        std::to_string(v.at("NC")) + " must be at least the micro-tile " + tile +
                                        " and KC=" + std::to_string(v.at("KC")) + " at least one 128-deep scale block");
  p.mc = v.at("MC") / p.MR * p.MR;
  p.nc = v.at("NC") / p.NR * p.NR;
  p.kc = v.at("KC") / kScaleBlock * kScaleBlock;
  // A thread's rows are at most M, rounded up to whole micro-panels.
  p.block_rows = p.loop_order == 0 ? (M + p.MR - 1) / p.MR * p.MR : p.mc;
  require_threads(p.threads, hw_threads);
  const double bytes = static_cast<double>(p.workspace_bytes_per_thread()) * p.threads;
  if (bytes > workspace_limit)
    fail(TrialStatus::LaunchError,
         "gemm_a8w8_blockscale packing workspace (MC=" + std::to_string(p.mc) + " NC=" + std::to_string(p.nc) +
             " KC=" + std::to_string(p.kc) + ", threads=" + std::to_string(p.threads) + ") needs " +
             std::to_string(static_cast<long long>(bytes)) + " bytes, device allows " +
             std::to_string(static_cast<long long>(workspace_limit)) + " (max_workspace_bytes)");
  return p;
}

bool run_a8w8(const A8Plan& p, const A8Operands& op, std::vector<AlignedBuffer<unsigned char>>& workspace,
              ThreadPool& pool, StopFlag& stop) {
  const int T = p.threads;
  reserve_per_thread(workspace, T, p.workspace_bytes_per_thread());
  pool.run(T, [&](int t) {
    const GridCell g = grid_cell(t, T, op.M, op.N, p.MR, p.NR);
    if (!g.empty()) a8w8_block(p, op, g.m0, g.m1, g.n0, g.n1, Workspace(p, workspace[t].data()), stop);
  });
  return !stop.stopped();
}

}  // namespace ktune::cpu
