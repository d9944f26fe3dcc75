// Thread-block clusters (sm_90): each block writes where it sits in its cluster, read from the
// PTX special registers, so a launch that lost its cluster attribute (a cluster of one) shows.
// out[2*b] = %cluster_ctarank, out[2*b + 1] = %cluster_nctarank.
extern "C" __global__ void cluster_ranks(float* out) {
  unsigned rank = 0, size = 0;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(size));
  if (threadIdx.x == 0) {
    out[2 * blockIdx.x] = static_cast<float>(rank);
    out[2 * blockIdx.x + 1] = static_cast<float>(size);
  }
}

// The reference, launched without a cluster: what clusters of `cluster_x` blocks along x give.
extern "C" __global__ void expected_ranks(float* out, int cluster_x) {
  if (threadIdx.x == 0) {
    out[2 * blockIdx.x] = static_cast<float>(blockIdx.x % cluster_x);
    out[2 * blockIdx.x + 1] = static_cast<float>(cluster_x);
  }
}
