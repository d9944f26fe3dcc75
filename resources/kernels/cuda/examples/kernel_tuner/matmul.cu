// Kernel Tuner's matmul example as a user brings it to ktune: a C++ kernel (no extern "C"), its
// tunables as bare macros (block_size_x/y, tile_size_x/y, given by ktune as -D defines), WIDTH a
// macro too. Written for ktune after the example's shape (Volkov's "better performance at lower
// occupancy" tiling), not copied from it: C = A * B for square WIDTH x WIDTH row-major matrices.
// Tiling in x widens a block's tile of C; tiling in y gives each thread several rows. The loads
// assume block_size_x == block_size_y * tile_size_y (the spec's restriction) and WIDTH a
// multiple of the tile sides.
#ifndef WIDTH
#define WIDTH 512
#endif

__global__ void matmul_kernel(float *C, float *A, float *B) {
  // A's tile: (block_size_y*tile_size_y) rows x block_size_x columns of the k range; B's tile:
  // block_size_x rows of k x (block_size_x*tile_size_x) columns.
  __shared__ float tileA[block_size_y * tile_size_y][block_size_x];
  __shared__ float tileB[block_size_y * tile_size_y][block_size_x * tile_size_x];

  const int tx = threadIdx.x, ty = threadIdx.y;
  const int col0 = blockIdx.x * block_size_x * tile_size_x + tx;
  const int row0 = blockIdx.y * block_size_y * tile_size_y + ty;

  float acc[tile_size_y][tile_size_x];
#pragma unroll
  for (int i = 0; i < tile_size_y; i++)
#pragma unroll
    for (int j = 0; j < tile_size_x; j++) acc[i][j] = 0.0f;

  for (int k0 = 0; k0 < WIDTH; k0 += block_size_x) {
    __syncthreads();
#pragma unroll
    for (int i = 0; i < tile_size_y; i++) {
      const int r = ty + i * block_size_y;
      tileA[r][tx] = A[(row0 + i * block_size_y) * WIDTH + k0 + tx];
#pragma unroll
      for (int j = 0; j < tile_size_x; j++) tileB[r][tx + j * block_size_x] = B[(k0 + r) * WIDTH + col0 + j * block_size_x];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < block_size_x; k++)
#pragma unroll
      for (int i = 0; i < tile_size_y; i++)
#pragma unroll
        for (int j = 0; j < tile_size_x; j++) acc[i][j] += tileA[ty + i * block_size_y][k] * tileB[k][tx + j * block_size_x];
  }

#pragma unroll
  for (int i = 0; i < tile_size_y; i++)
#pragma unroll
    for (int j = 0; j < tile_size_x; j++) C[(row0 + i * block_size_y) * WIDTH + col0 + j * block_size_x] = acc[i][j];
}
