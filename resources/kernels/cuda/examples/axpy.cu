// A user kernel for `ktune tune --kernel-spec`: out = a*x + y, each thread handling ITEMS
// elements ITEMS*THREADS apart (coalesced), THREADS per block. Not built in: it shows a spec.
extern "C" __global__ void __launch_bounds__(THREADS) axpy(const float* x, const float* y, float* out, float a, long long n) {
  const long long base = (long long)blockIdx.x * THREADS * ITEMS + threadIdx.x;
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const long long j = base + (long long)i * THREADS;
    if (j < n) out[j] = a * x[j] + y[j];
  }
}
