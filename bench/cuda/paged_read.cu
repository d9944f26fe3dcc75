// The bandwidth ceiling of paged decode attention: a kernel that reads exactly the K and V rows
// paged_attention must read (each sequence's tokens, of every kv head, through the same page
// table over the same pool) and computes nothing. No attention kernel reading its K/V once can
// beat this kernel's fastest config, so its time / attention's time is the fraction of the
// ceiling reached. Blocks are (split, kv head, sequence), as paged_attention's; a thread has
// UNROLL 16-byte loads in flight. The loads feed an XOR stored only when it equals `never`.
typedef unsigned short u16;
#define CHUNKS_PER_ROW (HEAD_DIM * 2 / 16)

extern "C" __global__ void __launch_bounds__(THREADS)
    paged_read(const uint4* __restrict__ K, const uint4* __restrict__ V, const int* __restrict__ page_table,
               const int* __restrict__ lengths, unsigned* out, int kv_heads, int max_pages, unsigned never) {
  const int seq = blockIdx.z, kvh = blockIdx.y, len = lengths[seq];
  const int chunk = (max_pages + SPLITS - 1) / SPLITS * PAGE;
  const int t0 = blockIdx.x * chunk, t1 = min(len, t0 + chunk);
  if (t0 >= t1) return;
  const int* table = page_table + (long)seq * max_pages;
  const long n = (long)(t1 - t0) * CHUNKS_PER_ROW;  // 16-byte pieces of K (and as many of V)
  uint4 acc = make_uint4(0, 0, 0, 0);
  for (long base = threadIdx.x; base < n; base += THREADS * UNROLL) {
    uint4 k[UNROLL], v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const long c = base + (long)u * THREADS;
      const int t = t0 + (int)(c / CHUNKS_PER_ROW);
      const long at = (((long)table[min(t, t1 - 1) / PAGE] * kv_heads + kvh) * PAGE + t % PAGE) * CHUNKS_PER_ROW +
                      c % CHUNKS_PER_ROW;
      k[u] = c < n ? __ldg(K + at) : make_uint4(0, 0, 0, 0);
      v[u] = c < n ? __ldg(V + at) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      acc.x ^= k[u].x ^ v[u].x;
      acc.y ^= k[u].y ^ v[u].y;
      acc.z ^= k[u].z ^ v[u].z;
      acc.w ^= k[u].w ^ v[u].w;
    }
  }
  const unsigned r = acc.x ^ acc.y ^ acc.z ^ acc.w;
  if (r == never) out[0] = r;
}
