#pragma once
// The registry in the seed tools' own file formats, for their users' loaders and files:
// - aiter: per (N, K) a `{device}-GEMM-{tag}.json` of configs by M bucket, plus a default file of
//   the most common configs (aiter's tune scripts write these; its kernels read them).
// - tpu-tune: a JSON object of "key_params": {config, stats, metadata} entries, read into ktune's
//   registry.
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/kernel_family.h"
#include "ktune/registry.h"

namespace ktune {

// aiter's M buckets, in its order: small (M < 32), medium_M32, medium_M64, medium_M128 (M up to
// 32, 64, 128), large (M <= 256), xlarge (M > 256); "any" is the largest tuned M's config.
const std::vector<std::string>& aiter_buckets();
std::string aiter_bucket(std::int64_t m);

struct AiterFile {
  std::string name;             // "nvidia-h100-80gb-hbm3-GEMM-GEMM-N=4096-K=4096.json"
  nlohmann::ordered_json json;  // {"small": {...}, "medium_M32": {...}, ..., "any": {...}}
};

// One file per group of entries that share every key field but the bucket field (tag: the
// family's name in capitals, then its numeric fields, then text fields that differ between
// groups: "GEMM-N=4096-K=4096"), each bucket holding the config of the largest tuned M in it
// (lookups round M up); plus the default file `{device}-GEMM-{FAMILY}.json` holding per bucket
// the most common of the groups' configs, and under "any" the most common config of all
// entries. Throws InputError when the family has no bucket field or no entries.
std::vector<AiterFile> aiter_files(const Registry& registry, const KernelFamily& family);
// Writes them into `dir` (created), each atomically; returns the paths written.
std::vector<std::filesystem::path> export_aiter(const Registry& registry, const KernelFamily& family,
                                                const std::filesystem::path& dir);

struct TpuTuneEntries {
  std::vector<std::pair<std::string, RegistryEntry>> entries;  // registry key -> entry
  std::size_t median_from_samples = 0;                         // entries whose median is that of their samples_ns
  std::size_t median_from_average = 0;                         // entries without samples: median = latency_avg_ns
};

// Reads a tpu-tune registry file: an object of "key_params" -> {"config", "stats": {latency_avg_ns,
// latency_std_ns, compile_time_s}, "metadata": {benchmarking_method, samples_ns}}. `key_fields`
// names, in order, the family key fields the comma-separated values of each key give ("16,2048,4096"
// with batch,out,in); fields it leaves out take the family's defaults. tpu-tune records no median:
// it is the median of samples_ns where there are samples, else latency_avg_ns. Every config is
// checked against the family's space. Throws InputError naming the file, the key and the field.
TpuTuneEntries read_tpu_tune(const std::filesystem::path& file, const KernelFamily& family,
                             const std::vector<std::string>& key_fields);

}  // namespace ktune
