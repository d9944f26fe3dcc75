#pragma once
// tpu-inference's tuned_data files, read into ktune's registry and written from it, as
// tpu-inference's loaders (quantized_matmul/tuned_block_sizes.py, ragged_paged_attention/v3/
// tuned_block_sizes.py) read them:
// - flat (quantized_matmul/{tpu}.json): "n_batch,n_out,n_in,x_q_dtype,w_q_dtype" -> a value;
// - nested (ragged_paged_attention/v3/{tpu}.json): "128" (page size) -> "q_bfloat16_kv_bfloat16"
//   -> "q_head-128_kv_head-16_head-128" -> "max_model_len-1024-sw-None" -> a value;
// a value being {"config": {...}, "stats": {...}, "metadata": {...}} (stats often {} or absent:
// a config without a measurement) or a bare list of block sizes ([batch, out, in(, n_lane)] and
// [num_kv_pages_per_block, num_q_per_block]).
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/kernel_family.h"
#include "ktune/registry.h"

namespace ktune {

enum class TpuLayout { Flat, Nested };

struct TpuOptions {
  // Flat layout: the family key fields a key's comma-separated values give, in order; empty:
  // ktune's qmatmul names for tpu-inference's (n_batch, n_out, n_in, x_q_dtype, w_q_dtype).
  std::vector<std::string> key_fields;
  // The parameters a bare list's values are, in order; empty: tpu-inference's (TunedValue's)
  // batch_block_size, out_block_size, in_block_size, n_lane_multiplier (flat), or
  // num_kv_pages_per_block, num_q_per_block (nested).
  std::vector<std::string> list_params;
  // Import: "field=value" for key fields the file's keys do not give (the nested layout has no
  // num_sequences); the family's defaults fill the others. A window ("-sw-128") needs a
  // sliding_window key field, whose default stands for tpu-inference's None; without one, such
  // entries are skipped (TpuImport::skipped).
  std::vector<std::string> fixed_fields;
  // Export: bare lists (tpu-inference's newer files) instead of {"config", "stats", "metadata"}.
  bool lists = false;
};

struct TpuImport {
  TpuLayout layout = TpuLayout::Flat;
  std::vector<std::pair<std::string, RegistryEntry>> entries;  // registry key -> entry
  std::size_t unmeasured = 0;           // without a latency: imported as configs without a measurement
  std::size_t median_from_samples = 0;  // measured, median of samples_ns
  std::size_t median_from_average = 0;  // measured without samples: median = latency_avg_ns
  std::size_t from_lists = 0;           // values that were bare lists
  std::vector<std::string> skipped;     // key paths not imported, each with why
};

// Reads a tpu-inference tuned_data file (either layout, either kind of value) into entries of
// `family`: key names mapped onto the family's key fields (dtype names too: bfloat16 is bf16
// where the family's choices say so), parameters kept by name and checked against the family's
// space. Throws InputError naming the file, the key path and the field.
TpuImport read_tpu_inference(const std::filesystem::path& file, const KernelFamily& family, const TpuOptions& options);

struct TpuFile {
  std::filesystem::path path;  // relative: quantized_matmul/{device}.json, ragged_paged_attention/v3/{device}.json
  nlohmann::json json;
  std::size_t entries = 0;
  // Registry keys that differ only in fields tpu-inference's keys lack (num_sequences): the one
  // with the largest bucket value is written.
  std::size_t folded = 0;
};
// The family's entries in tpu-inference's layout: nested when the family has attention's key
// fields (num_q_heads, num_kv_heads, head_dim, page_size, max_model_len), else flat over
// options.key_fields. Unmeasured entries are written with "stats": {}.
TpuFile tpu_inference_file(const Registry& registry, const KernelFamily& family, const TpuOptions& options);
// Writes it under `dir` (as tpu_inference/kernels/tuned_data holds it), atomically; returns it
// with `path` the file written.
TpuFile export_tpu_inference(const Registry& registry, const KernelFamily& family, const std::filesystem::path& dir,
                             const TpuOptions& options);

}  // namespace ktune
