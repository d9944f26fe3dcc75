#pragma once
// The registry as ROCm/aiter's tuned Triton GEMM configs (aiter/ops/triton/configs/), written
// for aiter's loader and read back from the files aiter ships.
//
// aiter's loader (get_gemm_config: aiter/ops/triton/utils/gemm_config_utils.py, later
// utils/_config/gemm.py) picks the config of a GEMM (M, N, K) of config name C ("GEMM-" and the
// kernel's tag: GEMM-A8W8_BLOCKSCALE) so: the file of (N, K) if there is one, else the default
// file, which must exist; in it the first `M_LEQ_b` with M <= b over its bounds ascending, else
// the first `M_GEQ_b` with M >= b over them descending, else `any`. A config is "tuned" only when
// it came from the (N, K) file and not from `any`. Files are named by the GPU architecture
// triton reports (arch_info.get_arch(): gfx942), not by a product name. Two layouts:
// - flat (configs/gemm/, the 277 files aiter ships there): {arch}-C.json and
//   {arch}-C-N={N}-K={K}.json; bounds 4, 8, 16, ..., 8192;
// - nested (aiter's tip, 2026): {arch}/triton/gemm/{c}/DEFAULT.json and C-N={N}-K={K}.json in
//   it ({c}: C lower-cased, '-' as '_'); bounds 1, 4, 8, ..., 8192.
// The seed guide's layout (small, medium_M32, medium_M64, medium_M128, large, xlarge) is kept as
// AiterLayout::Guide: aiter's loader reads only `any` of it.
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/kernel_family.h"
#include "ktune/registry.h"

namespace ktune {

enum class AiterLayout { Flat, Nested, Guide };
// "flat" | "nested" | "guide"; throws InputError naming the value otherwise.
AiterLayout aiter_layout_from_string(const std::string& text);

// The M bounds aiter's loader searches in `layout` (Guide: none).
const std::vector<std::int64_t>& aiter_m_bounds(AiterLayout layout);
// The bucket a tuned M is written to: M_LEQ_b of the smallest bound b >= m, else M_GEQ_ of the
// largest bound; in the guide's layout small (M < 32), medium_M32, medium_M64, medium_M128 (M up
// to 32, 64, 128), large (M <= 256), xlarge.
std::string aiter_bucket(std::int64_t m, AiterLayout layout);
// The guide's bucket names, in its order.
const std::vector<std::string>& aiter_guide_buckets();

// The architecture aiter names files by for a ktune device slug ("amd-instinct-mi300x" ->
// "gfx942"; a slug that is a gfx target is itself); "" when ktune does not know it.
std::string aiter_arch(const std::string& device_slug);
// aiter's config name of a family: "GEMM-" and the name in capitals less a leading "gemm_"
// (gemm_a8w8_blockscale: GEMM-A8W8_BLOCKSCALE).
std::string aiter_config_name(const KernelFamily& family);
// The nested layout's folder of a config name, as aiter's _dtype_dir(): GEMM-A8W8_BLOCKSCALE ->
// gemm_a8w8_blockscale.
std::string aiter_nested_dir_name(const std::string& config_name);

struct AiterExportOptions {
  AiterLayout layout = AiterLayout::Flat;
  // Names the files; empty: aiter_arch() of the registry's device (an InputError asks for it
  // when unknown), or in the guide's layout the device slug.
  std::string arch;
};

struct AiterFile {
  std::string name;             // relative path: "gfx942-GEMM-A8W8_BLOCKSCALE-N=4096-K=4096.json"
  nlohmann::ordered_json json;  // {"M_LEQ_16": {...}, ..., "any": {...}}
};

struct AiterExport {
  std::vector<AiterFile> files;
  // Tuned Ms that share a bucket with a larger tuned M, whose config the bucket holds (aiter
  // reads one config per bucket): "N=4096-K=4096: M=12 and M=16 share M_LEQ_16, which holds M=16's".
  std::vector<std::string> notes;
};

// One file per group of entries that share every key field but the bucket field (tag: the
// numeric fields, then the text fields that differ between groups: "-N=4096-K=4096"), each
// bucket holding the config of the largest tuned M in it and `any` that of the largest tuned M;
// plus the default file, holding per bucket the most common of the groups' configs and under
// `any` the most common config of all entries. Throws InputError when the family has no bucket
// field or no entries, or the architecture is unknown.
AiterExport aiter_files(const Registry& registry, const KernelFamily& family, const AiterExportOptions& options = {});
// Writes them into `dir` (created, with the nested layout's folders), each atomically; returns
// the paths written. `notes`, when given, receives AiterExport::notes.
std::vector<std::filesystem::path> export_aiter(const Registry& registry, const KernelFamily& family,
                                                const std::filesystem::path& dir,
                                                const AiterExportOptions& options = {},
                                                std::vector<std::string>* notes = nullptr);

struct AiterImport {
  std::string arch;  // of the files read
  // registry key -> entry without a measurement (RegistryEntry::measured() false): aiter's
  // files hold configs, not latencies.
  std::vector<std::pair<std::string, RegistryEntry>> entries;
  std::vector<std::filesystem::path> files_read;
  std::size_t other_files = 0;  // .json files of other kernels or backends, not read
  // What was read but not imported, and why (default files, `any`, keys aiter does not read).
  std::vector<std::string> notes;
};

// Reads aiter's (N, K) files of `family`'s config name, in either layout, from `path`: one such
// file, or a folder searched recursively. `M_LEQ_b` becomes the entry of M=b (ktune's lookup
// rounds M up to the next tuned M, as aiter's search does), `M_GEQ_b` that of M=b unless an
// M_LEQ_b holds it; `any` and the default files (no N, K) are noted, not imported. aiter's null
// (cache_modifier: null, which Triton reads as "") becomes "". `arch` picks the files of one
// architecture; empty: the only one there (an InputError lists them when there are several).
// Every config is checked against the family's space. Throws InputError naming the file, the
// bucket and the parameter.
AiterImport read_aiter(const std::filesystem::path& path, const KernelFamily& family, const std::string& arch);

}  // namespace ktune
