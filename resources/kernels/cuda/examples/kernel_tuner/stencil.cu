// Kernel Tuner's stencil example as a user brings it to ktune: a C++ kernel, one thread per cell
// of a domain_width x domain_height grid, its tunables (block_size_x, block_size_y) as bare
// macros. Written for ktune after the example's shape, not copied from it. Each interior cell
// becomes the mean of itself and its four neighbours; the border is never written (Kernel
// Tuner's script hides that by passing a copy of the input as the output; the spec says which
// region to check instead).
#ifndef domain_width
#define domain_width 4096
#endif
#ifndef domain_height
#define domain_height 2048
#endif

__global__ void stencil_kernel(float *x_new, float *x_old) {
  const int x = blockIdx.x * block_size_x + threadIdx.x;
  const int y = blockIdx.y * block_size_y + threadIdx.y;
  const bool interior = x > 0 && x < domain_width - 1 && y > 0 && y < domain_height - 1;
  if (!interior) return;
  const int at = y * domain_width + x;
  const float row = x_old[at - 1] + x_old[at] + x_old[at + 1];
  x_new[at] = (row + x_old[at - domain_width] + x_old[at + domain_width]) / 5.0f;
}
