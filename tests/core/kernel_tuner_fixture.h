#pragma once
// Kernel Tuner cache files of our own making, laid out as tune_kernel(..., cache=FILE) writes them
// (kernel_tuner/util.py: the header dumped with indent="" and cut before the cache's closing
// braces, then one `"key": {...},` line per measured config, closed with "}\n}" at the end): a
// sparse sample of a large space, as a random or model-guided Kernel Tuner run leaves, with the
// failure markers and the extra metrics real caches carry.
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ktune::test {

struct SparseCache {
  nlohmann::ordered_json json;
  std::uint64_t space_size = 0;  // the product of tune_params
  std::string best_key;          // the cache key of the fastest recorded config
  double best_ms = 0;
};

// `n` configs of a 6-parameter space of 3,840 configs, picked by a fixed generator, in the order
// "measured". Configs with more than 1024 threads are InvalidConfig (as Kernel Tuner records a
// config the device refuses); every 17th is CompilationFailedConfig, every 23rd
// RuntimeFailedConfig. Times are a smooth function of the parameters, seven samples each.
inline SparseCache sparse_kernel_tuner_cache(std::size_t n) {
  using ojson = nlohmann::ordered_json;
  const std::vector<std::pair<std::string, std::vector<int>>> params = {
      {"block_size_x", {16, 32, 64, 128, 256}},
      {"block_size_y", {1, 2, 4, 8, 16, 32}},
      {"tile_size_x", {1, 2, 4, 8}},
      {"tile_size_y", {1, 2, 4, 8}},
      {"loop_unroll_factor", {0, 1, 2, 4}},
      {"use_shared_mem", {0, 1}},
  };
  SparseCache out;
  ojson& root = out.json;
  root["device_name"] = "NVIDIA H100 80GB HBM3";
  root["kernel_name"] = "sparse_kernel";
  root["problem_size"] = {2048, 2048};
  root["tune_params_keys"] = ojson::array();
  root["tune_params"] = ojson::object();
  out.space_size = 1;
  for (const auto& [name, values] : params) {
    root["tune_params_keys"].push_back(name);
    root["tune_params"][name] = values;
    out.space_size *= values.size();
  }
  root["objective"] = "time";
  root["cache"] = ojson::object();
  std::uint64_t state = 12345;
  std::set<std::string> seen;
  for (std::size_t i = 0; seen.size() < n; ++i) {
    ojson rec;
    std::string key;
    std::vector<int> v;
    for (const auto& [name, values] : params) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      v.push_back(values[(state >> 33) % values.size()]);
      rec[name] = v.back();
      if (!key.empty()) key += ',';
      key += std::to_string(v.back());
    }
    if (!seen.insert(key).second) continue;
    const std::size_t k = seen.size();
    if (v[0] * v[1] > 1024) {
      rec["time"] = "InvalidConfig";
    } else if (k % 17 == 0) {
      rec["time"] = "CompilationFailedConfig";
    } else if (k % 23 == 0) {
      rec["time"] = "RuntimeFailedConfig";
    } else {
      const double ms = 0.5 + 0.04 * std::abs(std::log2(v[0] * v[1]) - 8) + 0.03 * std::abs(v[2] - 4) +
                        0.02 * std::abs(v[3] - 2) + 0.01 * v[4] + 0.05 * (1 - v[5]);
      rec["times"] = ojson::array();
      for (int s = 0; s < 7; ++s) rec["times"].push_back(ms * (1 + 0.001 * ((s * 5) % 7)));
      rec["time"] = ms * (1 + 0.001 * 3);  // the mean of the seven
      rec["compile_time"] = 812.5;
      rec["GFLOP/s"] = 1e3 / ms;
      if (out.best_key.empty() || ms < out.best_ms) out.best_key = key, out.best_ms = ms;
    }
    rec["verification_time"] = 0;
    rec["benchmark_time"] = 9.1;
    rec["strategy_time"] = 0;
    rec["framework_time"] = 0.4;
    rec["timestamp"] = "2026-11-20 14:00:00.000000+00:00";
    root["cache"][key] = rec;
  }
  return out;
}

// `cache` as Kernel Tuner's file: open (ending in the last entry's comma, as while tuning) or closed.
inline std::string kernel_tuner_text(const nlohmann::ordered_json& cache, bool closed) {
  nlohmann::ordered_json header = cache;
  header["cache"] = nlohmann::ordered_json::object();
  std::string text = header.dump(0);
  text.resize(text.size() - 3);  // `"cache": {}\n}` -> `"cache": {`
  for (const auto& [key, rec] : cache["cache"].items()) {
    nlohmann::ordered_json line;
    line[key] = rec;
    const std::string one = line.dump();
    text += '\n';
    text.append(one, 1, one.size() - 2);  // `{"key": {...}}` -> `"key": {...}`
    text += ',';
  }
  if (closed) {
    if (text.back() == ',') text.pop_back();
    text += "}\n}";
  }
  return text;
}

}  // namespace ktune::test
