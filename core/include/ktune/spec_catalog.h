#pragma once
// The kernel specs a GPU backend knows: its built-in families (sources and specs compiled into
// the binary by cmake/embed_kernels.cmake) and the spec files a user loaded (--kernel-spec).
// Thread-safe: sessions are opened while specs are loaded.
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ktune/kernel_family.h"
#include "ktune/kernel_spec.h"

namespace ktune {

struct EmbeddedFile {
  std::string name;  // "gemm.json", "gemm.cu"
  std::string text;
};

class SpecCatalog {
 public:
  // Every "*.json" of `builtin` parsed as a spec of `dialect`, its sources found among `builtin`;
  // the family's source reads "built-in <name>". `dialect` must outlive the catalog.
  SpecCatalog(const std::vector<EmbeddedFile>& builtin, const SpecDialect& dialect);

  std::vector<KernelFamily> builtin_families() const;
  // Parses a spec file of the dialect and keeps it; throws InputError naming the file.
  KernelFamily load(const std::filesystem::path& file);
  // The spec of `family` (by name and source, latest loaded first); throws InputError naming the
  // backend and its built-in families.
  std::shared_ptr<const KernelSpec> find(const KernelFamily& family) const;

 private:
  const SpecDialect& dialect_;
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<const KernelSpec>> specs_;
};

}  // namespace ktune
