#include "ktune/registry_format_aiter.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>

#include "ktune/error.h"
#include "ktune/files.h"

namespace ktune {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

AiterLayout aiter_layout_from_string(const std::string& text) {
  if (text == "flat") return AiterLayout::Flat;
  if (text == "nested") return AiterLayout::Nested;
  if (text == "guide") return AiterLayout::Guide;
  throw InputError("unknown aiter layout '" + text + "': flat, nested or guide");
}

const std::vector<std::int64_t>& aiter_m_bounds(AiterLayout layout) {
  // gemm_config_utils.py's STANDARD_M_BOUNDS before the nested layout, and _config/gemm.py's.
  static const std::vector<std::int64_t> flat{4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192};
  static const std::vector<std::int64_t> nested{1, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192};
  static const std::vector<std::int64_t> none;
  return layout == AiterLayout::Flat ? flat : layout == AiterLayout::Nested ? nested : none;
}

const std::vector<std::string>& aiter_guide_buckets() {
  static const std::vector<std::string> names{"small", "medium_M32", "medium_M64", "medium_M128", "large", "xlarge"};
  return names;
}

std::string aiter_bucket(std::int64_t m, AiterLayout layout) {
  if (layout == AiterLayout::Guide) {
    if (m < 32) return "small";
    if (m <= 32) return "medium_M32";
    if (m <= 64) return "medium_M64";
    if (m <= 128) return "medium_M128";
    if (m <= 256) return "large";
    return "xlarge";
  }
  const auto& bounds = aiter_m_bounds(layout);
  for (const auto b : bounds)
    if (m <= b) return "M_LEQ_" + std::to_string(b);
  return "M_GEQ_" + std::to_string(bounds.back());
}

std::string aiter_arch(const std::string& device_slug) {
  // Product names as ROCm spells them (hipDeviceProp_t::name, slugified) -> gfx target.
  static const std::map<std::string, std::string> products{
      {"mi300x", "gfx942"}, {"mi300a", "gfx942"}, {"mi308x", "gfx942"}, {"mi325x", "gfx942"}, {"mi350x", "gfx950"},
      {"mi355x", "gfx950"}, {"mi250x", "gfx90a"}, {"mi250", "gfx90a"},  {"mi210", "gfx90a"},  {"mi100", "gfx908"},
      {"7900", "gfx1100"},  {"w7900", "gfx1100"}, {"r9700", "gfx1201"}, {"9070", "gfx1201"},  {"9070xt", "gfx1201"},
  };
  std::stringstream ss(device_slug);
  for (std::string token; std::getline(ss, token, '-');) {
    if (token.rfind("gfx", 0) == 0 && token.size() > 3) return token;
    if (const auto it = products.find(token); it != products.end()) return it->second;
  }
  return "";
}

namespace {

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// Parameters in the space's order, as aiter's files list them.
ordered_json config_json(const Config& c, const KernelFamily& family) {
  ordered_json j = ordered_json::object();
  const Config ordered = in_space_order(c, family.default_space);
  for (const auto& [k, v] : ordered.values()) j[k] = ordered_json(v.to_json());
  return j;
}

// Most common config among `configs`, ties to the smallest key (deterministic).
Config most_common_of(const std::vector<Config>& configs) {
  std::map<std::string, std::pair<int, const Config*>> counts;
  for (const auto& c : configs) {
    auto& slot = counts[c.key()];
    ++slot.first;
    slot.second = &c;
  }
  const auto best = std::max_element(counts.begin(), counts.end(),
                                     [](const auto& a, const auto& b) { return a.second.first < b.second.first; });
  return *best->second.second;
}

// The buckets of a layout in the order aiter's files list them.
std::vector<std::string> bucket_order(AiterLayout layout) {
  if (layout == AiterLayout::Guide) return aiter_guide_buckets();
  std::vector<std::string> out;
  for (const auto b : aiter_m_bounds(layout)) out.push_back("M_LEQ_" + std::to_string(b));
  out.push_back("M_GEQ_" + std::to_string(aiter_m_bounds(layout).back()));
  return out;
}

struct Naming {
  std::string group_prefix;  // a group's file is this, its tag, ".json"
  std::string default_file;
};

Naming naming(const Registry& registry, const KernelFamily& family, const AiterExportOptions& options) {
  std::string arch = options.arch;
  if (arch.empty()) arch = options.layout == AiterLayout::Guide ? registry.device() : aiter_arch(registry.device());
  if (arch.empty())
    throw InputError(
        "aiter names its files by the GPU architecture triton reports (gfx942, gfx950, ...); ktune "
        "does not know that of device '" +
        registry.device() + "': give it with --arch");
  if (arch.find_first_of("/\\") != std::string::npos || arch == "." || arch == "..")
    throw InputError("--arch '" + arch + "' is not a file name: give an architecture such as gfx942");
  const std::string config = aiter_config_name(family);
  if (options.layout != AiterLayout::Nested) return {arch + "-" + config, arch + "-" + config + ".json"};
  const std::string dir = arch + "/triton/gemm/" + aiter_nested_dir_name(config) + "/";
  return {dir + config, dir + "DEFAULT.json"};
}

// Entries grouped by every key field but the bucket field; within a group, M -> config.
struct Group {
  Problem rest;
  std::map<std::int64_t, Config> by_m;
};

std::map<std::string, Group> groups_of(const std::map<std::string, RegistryEntry>& entries,
                                       const KernelFamily& family) {
  std::map<std::string, Group> groups;
  for (const auto& [key, e] : entries) {
    const Problem p = Problem::from_key(family.name, key);
    std::int64_t m = 0;
    try {
      m = p.num(family.bucket_field);
    } catch (const InputError& err) {
      throw InputError("registry entry " + family.name + " " + key + ": " + err.what() +
                       "; aiter's buckets need a size");
    }
    Problem rest;
    for (const auto& [k, v] : p.fields)
      if (k != family.bucket_field) rest.fields.emplace_back(k, v);
    Group& g = groups[rest.local_key()];
    g.rest = rest;
    g.by_m[m] = e.config;
  }
  return groups;
}

// "-N=4096-K=4096": numeric fields, and text fields (dtypes) only where they tell groups apart.
std::string group_tag(const Problem& rest, const KernelFamily& family,
                      const std::map<std::string, std::set<std::string>>& text_values) {
  std::string tag;
  for (const auto& [k, v] : rest.fields) {
    const KeyField* kf = family.field(k);
    if (kf && !kf->numeric && text_values.at(k).size() < 2) continue;
    tag += "-" + k + "=" + v;
  }
  return tag;
}

}  // namespace

std::string aiter_nested_dir_name(const std::string& config_name) {
  std::string s = config_name;
  for (char& c : s) c = c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string aiter_config_name(const KernelFamily& family) {
  // aiter's kernels look up GEMM-{tag} (GEMM-A8W8_BLOCKSCALE): a family named gemm_<tag> keeps the tag.
  const std::string tag = family.name.rfind("gemm_", 0) == 0 ? family.name.substr(5) : family.name;
  return "GEMM-" + upper(tag);
}

AiterExport aiter_files(const Registry& registry, const KernelFamily& family, const AiterExportOptions& options) {
  if (family.bucket_field.empty())
    throw InputError(family.name + " has no bucket field: aiter's files bucket configs by M; export another format");
  const auto f = registry.entries().find(family.name);
  if (f == registry.entries().end() || f->second.empty())
    throw InputError("the " + registry.backend() + "/" + registry.device() + " registry has no " + family.name +
                     " entries to export");
  registry.check(family);
  const Naming names = naming(registry, family, options);
  const auto groups = groups_of(f->second, family);
  std::map<std::string, std::set<std::string>> text_values;  // text field -> values seen
  for (const auto& [gkey, g] : groups)
    for (const auto& [k, v] : g.rest.fields)
      if (const KeyField* kf = family.field(k); kf && !kf->numeric) text_values[k].insert(v);

  AiterExport out;
  const auto order = bucket_order(options.layout);
  std::map<std::string, std::vector<Config>> per_bucket;  // for the default file
  std::vector<Config> all;
  for (const auto& [gkey, g] : groups) {
    const std::string tag = group_tag(g.rest, family, text_values);
    AiterFile file{names.group_prefix + tag + ".json", ordered_json::object()};
    std::map<std::string, std::int64_t> bucket_m;  // the largest tuned M of each bucket wins
    for (const auto& [m, c] : g.by_m) {
      const std::string b = aiter_bucket(m, options.layout);
      if (const auto it = bucket_m.find(b); it != bucket_m.end())
        out.notes.push_back(tag.substr(1) + ": M=" + std::to_string(it->second) + " and M=" + std::to_string(m) +
                            " share " + b + ", which holds M=" + std::to_string(m) + "'s config");
      bucket_m[b] = m;
      all.push_back(c);
    }
    for (const auto& b : order)
      if (const auto it = bucket_m.find(b); it != bucket_m.end()) {
        const Config& c = g.by_m.at(it->second);
        file.json[b] = config_json(c, family);
        per_bucket[b].push_back(c);
      }
    file.json["any"] = config_json(g.by_m.rbegin()->second, family);
    out.files.push_back(std::move(file));
  }
  // aiter's loader requires the default file; `any` in it serves every shape without a file.
  AiterFile defaults{names.default_file, ordered_json::object()};
  for (const auto& b : order)
    if (const auto it = per_bucket.find(b); it != per_bucket.end())
      defaults.json[b] = config_json(most_common_of(it->second), family);
  defaults.json["any"] = config_json(most_common_of(all), family);
  out.files.push_back(std::move(defaults));
  return out;
}

std::vector<fs::path> export_aiter(const Registry& registry, const KernelFamily& family, const fs::path& dir,
                                   const AiterExportOptions& options, std::vector<std::string>* notes) {
  const AiterExport exported = aiter_files(registry, family, options);
  std::vector<fs::path> written;
  for (const auto& f : exported.files) {
    const fs::path path = dir / f.name;
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    if (ec || !fs::is_directory(path.parent_path()))
      throw InputError("cannot use " + path.parent_path().string() + " as the output folder" +
                       (ec ? ": " + ec.message() : ": not a folder"));
    write_file_atomic(path, f.json.dump(4) + "\n");
    written.push_back(path);
  }
  if (notes) *notes = exported.notes;
  return written;
}

}  // namespace ktune
