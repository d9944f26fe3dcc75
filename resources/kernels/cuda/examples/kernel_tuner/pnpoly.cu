// Kernel Tuner's point-in-polygon example as a user brings it to ktune: the device kernel
// cn_pnpoly (C++ linkage) and its naive reference cn_pnpoly_naive, the polygon in __constant__
// memory (d_vertices, and d_slopes for configs that read precomputed slopes), the tunables as
// bare macros. Written for ktune after the example's shape, not copied from it. A point is
// inside when a ray from it towards +x crosses the polygon's edges an odd number of times (the
// crossing number test, after Dan Sunday's "Inclusion of a Point in a Polygon").
//   block_size_x            threads per block
//   tile_size               points per thread, block_size_x apart
//   between_method          how "y lies between the edge's ends" is computed (0 to 3: the kernel
//                           is instruction bound, and the forms differ in speed and in how they
//                           treat a point level with a vertex)
//   use_precomputed_slopes  read each edge's dx/dy from d_slopes instead of dividing
//   use_method              0: flip a flag under a branch; 1: add up crossings without one
// Edge j runs from vertex j to vertex j-1 (vertex VERTICES-1 for j = 0); d_slopes[j] must hold
// (v[j-1].x - v[j].x) / (v[j-1].y - v[j].y) as computed in f32 (pnpoly_data.py writes it).
#ifndef VERTICES
#define VERTICES 600
#endif
#ifndef block_size_x
#define block_size_x 256
#endif
#ifndef tile_size
#define tile_size 1
#endif
#ifndef between_method
#define between_method 0
#endif
#ifndef use_precomputed_slopes
#define use_precomputed_slopes 0
#endif
#ifndef use_method
#define use_method 0
#endif

__constant__ float2 d_vertices[VERTICES];
__constant__ float d_slopes[VERTICES];

// Whether y lies between the edge's ends y0 and y1. Forms 0 and 1 are the same half-open test;
// 2 and 3 count a point level with y0 as between (the same test in two orders, whose speed
// differs with the other parameters).
__device__ __forceinline__ bool between(float y, float y0, float y1) {
#if between_method == 0
  return (y0 > y) != (y1 > y);
#elif between_method == 1
  return (y0 > y && y1 <= y) || (y0 <= y && y1 > y);
#elif between_method == 2
  return y - y0 == 0.0f || (y - y0) * (y - y1) < 0.0f;
#else
  return (y - y0) * (y - y1) < 0.0f || y - y0 == 0.0f;
#endif
}

__global__ void cn_pnpoly(int *bitmap, float2 *points, int n) {
  const int first = blockIdx.x * block_size_x * tile_size + threadIdx.x;
  if (first >= n) return;

  float2 p[tile_size];
  int crossings[tile_size];
#pragma unroll
  for (int t = 0; t < tile_size; t++) {
    crossings[t] = 0;
    const int i = first + t * block_size_x;
    if (i < n) p[t] = points[i];
  }

  for (int j = 0, k = VERTICES - 1; j < VERTICES; k = j++) {
    const float2 a = d_vertices[j], b = d_vertices[k];
#if use_precomputed_slopes
    const float slope = d_slopes[j];
#else
    const float slope = (b.x - a.x) / (b.y - a.y);
#endif
#pragma unroll
    for (int t = 0; t < tile_size; t++) {
#if use_method == 0
      if (between(p[t].y, a.y, b.y) && p[t].x < slope * (p[t].y - a.y) + a.x) crossings[t] = !crossings[t];
#else
      crossings[t] += between(p[t].y, a.y, b.y) && p[t].x < a.x + slope * (p[t].y - a.y);
#endif
    }
  }

#pragma unroll
  for (int t = 0; t < tile_size; t++) {
    const int i = first + t * block_size_x;
    if (i < n) bitmap[i] = crossings[t] & 1;
  }
}

// The reference: one point per thread, slopes divided here, form 0 of the between test.
__global__ void cn_pnpoly_naive(int *bitmap, float2 *points, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float2 p = points[i];
  bool inside = false;
  for (int j = 0, k = VERTICES - 1; j < VERTICES; k = j++) {
    const float2 a = d_vertices[j], b = d_vertices[k];
    if ((a.y > p.y) != (b.y > p.y) && p.x < (b.x - a.x) / (b.y - a.y) * (p.y - a.y) + a.x) inside = !inside;
  }
  bitmap[i] = inside;
}
