#pragma once
// A GPU backend's built-in families: kernel sources and specs compiled into the binary
// (cmake/embed_kernels.cmake writes each backend's table), and the specs parsed from them.
#include <memory>
#include <string>
#include <vector>

#include "ktune/kernel_spec.h"

namespace ktune {

struct EmbeddedFile {
  std::string name;  // "gemm.json", "gemm.cu"
  std::string text;
};

// Every "*.json" of `files` parsed as a spec of `dialect`, its sources found among `files`;
// the family's source reads "built-in <name>".
std::vector<std::shared_ptr<const KernelSpec>> embedded_specs(const std::vector<EmbeddedFile>& files,
                                                              const SpecDialect& dialect);

}  // namespace ktune
