// Kernel Tuner's convolution example as a user brings it to ktune: a C++ kernel, the filter in
// __constant__ memory (Kernel Tuner's cmem_args; ktune's "constant" argument), a naive kernel
// of the same source as the reference, and the tunables as bare macros. Written for ktune after
// the example's shape, not copied from it. output = input (*) filter, a 17x17 filter over an
// image_width x image_height image whose input carries a border of 16 (8 each side).
// use_padding adds a column to the shared tile (bank conflicts), read_only loads through the
// read-only cache. Bounds are checked, so block sides that do not divide the image are correct.
#ifndef image_width
#define image_width 4096
#endif
#ifndef image_height
#define image_height 4096
#endif
#define filter_width 17
#define filter_height 17
#define border_width (filter_width - 1)
#define border_height (filter_height - 1)
#define input_width (image_width + border_width)
#define input_height (image_height + border_height)

__constant__ float d_filter[filter_height * filter_width];

#if read_only
#define LOAD(p) __ldg(p)
#else
#define LOAD(p) (*(p))
#endif

__global__ void convolution_kernel(float *output, const float *__restrict__ input, const float *filter) {
  const int tile_w = block_size_x * tile_size_x, tile_h = block_size_y * tile_size_y;
  const int x0 = blockIdx.x * tile_w, y0 = blockIdx.y * tile_h;
  __shared__ float tile[block_size_y * tile_size_y + border_height][block_size_x * tile_size_x + border_width + use_padding];

  for (int i = threadIdx.y; i < tile_h + border_height; i += block_size_y)
    for (int j = threadIdx.x; j < tile_w + border_width; j += block_size_x) {
      const int y = y0 + i, x = x0 + j;
      tile[i][j] = (y < input_height && x < input_width) ? LOAD(&input[y * input_width + x]) : 0.0f;
    }
  __syncthreads();

  float acc[tile_size_y][tile_size_x];
#pragma unroll
  for (int yi = 0; yi < tile_size_y; yi++)
#pragma unroll
    for (int xi = 0; xi < tile_size_x; xi++) acc[yi][xi] = 0.0f;

#pragma unroll
  for (int fy = 0; fy < filter_height; fy++)
#pragma unroll
    for (int fx = 0; fx < filter_width; fx++) {
      const float w = d_filter[fy * filter_width + fx];
#pragma unroll
      for (int yi = 0; yi < tile_size_y; yi++)
#pragma unroll
        for (int xi = 0; xi < tile_size_x; xi++)
          acc[yi][xi] += tile[threadIdx.y + yi * block_size_y + fy][threadIdx.x + xi * block_size_x + fx] * w;
    }

#pragma unroll
  for (int yi = 0; yi < tile_size_y; yi++)
#pragma unroll
    for (int xi = 0; xi < tile_size_x; xi++) {
      const int y = y0 + threadIdx.y + yi * block_size_y, x = x0 + threadIdx.x + xi * block_size_x;
      if (y < image_height && x < image_width) output[y * image_width + x] = acc[yi][xi];
    }
}

// The reference: one thread per output pixel, straight from global memory, the filter from the
// `filter` argument rather than constant memory (so a constant that was never filled shows).
__global__ void convolution_naive(float *output, const float *input, const float *filter) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= image_width || y >= image_height) return;
  float acc = 0.0f;
  for (int fy = 0; fy < filter_height; fy++)
    for (int fx = 0; fx < filter_width; fx++) acc += input[(y + fy) * input_width + x + fx] * filter[fy * filter_width + fx];
  output[y * image_width + x] = acc;
}
