// Kernel Tuner's reduction example as a user brings it to ktune: a C++ kernel whose configs
// write num_blocks partial sums (one per thread block), its tunables as bare macros. Written for
// ktune after the example's shape, not copied from it. Run again with num_blocks=1 on the
// partial sums it gives the total (reduction_two_pass.json: a launch with its own defines).
// vector: floats loaded per thread per step (1, 2, 4); use_shuffle: the last warp reduces with
// shuffles instead of shared memory; loop_unroll_factor_0: the first loop's unroll factor (0
// leaves it to the compiler, as Kernel Tuner does).
#if vector == 1
#define floatvector float
#elif vector == 2
#define floatvector float2
#elif vector == 4
#define floatvector float4
#endif

__device__ __forceinline__ float lanes(float v) { return v; }
__device__ __forceinline__ float lanes(float2 v) { return v.x + v.y; }
__device__ __forceinline__ float lanes(float4 v) { return v.x + v.y + v.z + v.w; }

__global__ void sum_floats(float *sum_global, const floatvector *array, int n) {
  const int ti = threadIdx.x;
  const int step = num_blocks * block_size_x;
  float sum = 0.0f;
#if loop_unroll_factor_0 > 0
#pragma unroll loop_unroll_factor_0
#endif
  for (int i = blockIdx.x * block_size_x + ti; i < n / vector; i += step) sum += lanes(array[i]);

  __shared__ float partial[block_size_x];
  partial[ti] = sum;
  __syncthreads();
  // Halve the active threads down to one (or to a warp, when shuffles finish the job).
#pragma unroll
  for (int s = block_size_x / 2; s > (use_shuffle ? 16 : 0); s >>= 1) {
    if (ti < s) partial[ti] += partial[ti + s];
    __syncthreads();
  }
#if use_shuffle
  if (ti < 32) {
    sum = partial[ti];
#pragma unroll
    for (int s = 16; s > 0; s >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, s);
  }
#else
  sum = partial[0];
#endif
  if (ti == 0) sum_global[blockIdx.x] = sum;
}
