// A kernel with one real fault per MODE, for the failure-status tests:
// 0 correct (y = 2x), 1 does not compile, 2 asks for too much shared memory (spec), 3 writes far
// out of bounds, 4 runs for 300 ms, 5 computes the wrong value, 6 asks for too many threads (spec).
extern "C" __global__ void scale(const float* x, float* y, int n) {
#if MODE == 1
  this line is not C++;
#endif
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
#if MODE == 3
  if (i == 0) y[1ll << 40] = 1.f;
#endif
#if MODE == 4
  if (threadIdx.x == 0) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < 300000000ull);
  }
#endif
  if (i < n) y[i] = (MODE == 5 ? 3.f : 2.f) * x[i];
}
