#pragma once
// The built-in families' sources and specs (resources/kernels/cuda), compiled into the binary.
#include <string>
#include <vector>

namespace ktune::cuda {

struct EmbeddedFile {
  std::string name;  // "gemm.json", "gemm.cu"
  std::string text;
};
const std::vector<EmbeddedFile>& embedded_kernel_files();

}  // namespace ktune::cuda
