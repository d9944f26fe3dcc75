// The decode ceiling of grouped_gemm's fwd and dX passes: a kernel that reads, once, the weights of
// every expert the routing gives rows to (w[e]: intermediate x hidden) and computes nothing. At
// decode those weights are nearly all the bytes either pass must move (x or dy is a few rows), so
// no grouped GEMM can beat this kernel's fastest config, and its time / the GEMM's time is the
// fraction of the ceiling reached. Blocks are (slice, expert); an expert without rows returns at
// once, as the GEMM's blocks do; a thread has UNROLL 16-byte loads in flight. The loads feed an XOR
// stored only when it equals `never`, so the compiler cannot drop them.
extern "C" __global__ void __launch_bounds__(THREADS)
    grouped_read(const uint4* __restrict__ w, const int* __restrict__ offsets, unsigned* out, long long per_expert,
                 unsigned never) {
  const int e = blockIdx.y;
  if (offsets[e + 1] == offsets[e]) return;
  const long long slice = (per_expert + gridDim.x - 1) / gridDim.x;
  const long long c0 = blockIdx.x * slice, c1 = min(per_expert, c0 + slice);
  const uint4* src = w + e * per_expert;
  uint4 acc = make_uint4(0, 0, 0, 0);
  for (long long base = c0 + threadIdx.x; base < c1; base += (long long)THREADS * UNROLL) {
    uint4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const long long c = base + (long long)u * THREADS;
      v[u] = c < c1 ? __ldg(src + c) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      acc.x ^= v[u].x;
      acc.y ^= v[u].y;
      acc.z ^= v[u].z;
      acc.w ^= v[u].w;
    }
  }
  const unsigned r = acc.x ^ acc.y ^ acc.z ^ acc.w;
  if (r == never) out[0] = r;
}
