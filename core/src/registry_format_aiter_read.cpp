// read_aiter: aiter's shipped (N, K) config files into registry entries without a measurement.
#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include "ktune/error.h"
#include "ktune/json_read.h"
#include "ktune/registry_format_aiter.h"
#include "ktune/run_store.h"
#include "ktune/version.h"

namespace ktune {

namespace fs = std::filesystem;

namespace {

std::string regex_escape(const std::string& s) {
  static const std::regex special(R"([.^$|()\[\]{}*+?\\])");
  return std::regex_replace(s, special, R"(\$&)");
}

// One of aiter's files of the config name, as its name and folder say.
struct FileRole {
  bool matches = false;
  bool is_default = false;
  std::string arch;
  std::int64_t n = 0, k = 0;
};

// flat: {arch}-C.json, {arch}-C-N=..-K=...json; nested: {arch}/triton/gemm/{c}/DEFAULT.json and
// C-N=..-K=...json there (gluon's files take other parameters: not read).
FileRole role_of(const fs::path& file, const std::string& config_name) {
  const std::string c = regex_escape(config_name);
  const std::regex flat_nk("([A-Za-z0-9_]+)-" + c + R"(-N=(\d+)-K=(\d+)\.json)");
  const std::regex flat_default("([A-Za-z0-9_]+)-" + c + R"(\.json)");
  const std::regex nested_nk(c + R"(-N=(\d+)-K=(\d+)\.json)");
  const std::string name = file.filename().string();
  const fs::path dir = file.parent_path();  // {arch}/triton/gemm/{c}
  const bool nested = dir.filename() == aiter_nested_dir_name(config_name) && dir.parent_path().filename() == "gemm" &&
                      dir.parent_path().parent_path().filename() == "triton";
  const std::string nested_arch = dir.parent_path().parent_path().parent_path().filename().string();
  std::smatch m;
  FileRole r;
  if (std::regex_match(name, m, flat_nk)) {
    r = {true, false, m[1], std::stoll(m[2]), std::stoll(m[3])};
  } else if (std::regex_match(name, m, flat_default)) {
    r = {true, true, m[1], 0, 0};
  } else if (nested && std::regex_match(name, m, nested_nk)) {
    r = {true, false, nested_arch, std::stoll(m[1]), std::stoll(m[2])};
  } else if (nested && name == "DEFAULT.json") {
    r = {true, true, nested_arch, 0, 0};
  }
  return r;
}

// aiter's bucket value -> a ktune config: integers, booleans and strings as they are, null as ""
// (Triton reads cache_modifier None and "" alike: no modifier).
Config config_of(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw InputError(where + ": expected an object of parameter: value, got " + j.dump());
  nlohmann::json plain = nlohmann::json::object();
  for (const auto& [k, v] : j.items()) {
    if (v.is_object() || v.is_array())
      throw InputError(where + ": " + k + " holds " + (v.is_object() ? "an object" : "a list") +
                       "; ktune configs hold integers, booleans and strings (a kernel with nested configs is not "
                       "importable)");
    if (v.is_number_float())
      throw InputError(where + ": " + k + "=" + v.dump() +
                       " is not an integer; ktune configs hold integers, "
                       "booleans and strings");
    plain[k] = v.is_null() ? nlohmann::json("") : v;
  }
  try {
    return Config::from_json(plain);
  } catch (const InputError& err) {
    throw InputError(where + ": " + err.what());
  }
}

std::vector<fs::path> candidate_files(const fs::path& path) {
  std::vector<fs::path> out;
  if (!fs::is_directory(path)) return {path};
  for (const auto& e : fs::recursive_directory_iterator(path))
    if (e.is_regular_file() && e.path().extension() == ".json") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// The architecture to read: `arch`, else the only one among the files.
std::string pick_arch(const std::map<std::string, std::vector<fs::path>>& by_arch, const fs::path& path,
                      const std::string& arch, const std::string& config_name) {
  if (!arch.empty()) {
    if (!by_arch.count(arch)) {
      std::string there;
      for (const auto& [a, files] : by_arch) there += (there.empty() ? "" : ", ") + a;
      throw InputError(path.string() + " holds no " + config_name + " files of " + arch +
                       (there.empty() ? "" : " (it has " + there + ")"));
    }
    return arch;
  }
  if (by_arch.empty())
    throw InputError(path.string() + " holds no aiter files of " + config_name + " ({arch}-" + config_name +
                     "-N=..-K=...json, or " + config_name + "-N=..-K=...json under {arch}/triton/gemm/)");
  if (by_arch.size() > 1) {
    std::string there;
    for (const auto& [a, files] : by_arch) there += (there.empty() ? "" : ", ") + a;
    throw InputError(path.string() + " holds " + config_name + " files of " + there + ": name one with --arch");
  }
  return by_arch.begin()->first;
}

// A file's buckets: M_LEQ_b -> M=b, M_GEQ_b -> M=b where no M_LEQ_b holds it. Notes the rest.
std::map<std::int64_t, std::string> buckets_of(const nlohmann::json& j, const std::string& file,
                                               std::vector<std::string>& notes) {
  static const std::regex bucket(R"(M_(LEQ|GEQ)_(\d+))");
  std::map<std::int64_t, std::string> leq, geq;
  std::vector<std::string> unread;
  for (const auto& [key, v] : j.items()) {
    std::smatch m;
    if (std::regex_match(key, m, bucket)) {
      (m[1] == "LEQ" ? leq : geq)[std::stoll(m[2])] = key;
    } else if (key != "any" && key != "M_BOUNDS") {  // M_BOUNDS: the bounds a kernel passes, not a config
      unread.push_back(key);
    }
  }
  for (const auto& [b, key] : geq) {
    if (leq.count(b))
      notes.push_back(file + ": " + key + " not imported: M=" + std::to_string(b) + " is " + leq[b] + "'s");
    else
      leq[b] = key;
  }
  if (!unread.empty()) {
    std::string keys;
    for (const auto& k : unread) keys += (keys.empty() ? "" : ", ") + k;
    notes.push_back(file + ": " + keys + " not imported: aiter's loader reads only M_LEQ_*, M_GEQ_* and any");
  }
  return leq;
}

}  // namespace

AiterImport read_aiter(const fs::path& path, const KernelFamily& family, const std::string& arch) {
  for (const char* f : {"M", "N", "K"})
    if (!family.field(f))
      throw InputError("aiter's files key configs by M, N and K; " + family.name + " has no key field '" + f + "'");
  const std::string config_name = aiter_config_name(family);
  std::map<std::string, std::vector<fs::path>> by_arch;
  AiterImport out;
  std::map<fs::path, FileRole> roles;
  for (const auto& file : candidate_files(path)) {
    const FileRole r = role_of(file, config_name);
    if (!r.matches) {
      ++out.other_files;
      continue;
    }
    roles[file] = r;
    by_arch[r.arch].push_back(file);
  }
  out.arch = pick_arch(by_arch, path, arch, config_name);
  const std::string stamp = now_iso8601();
  std::set<std::string> seen;
  for (const auto& file : by_arch[out.arch]) {
    const FileRole& r = roles[file];
    const std::string name = file.filename().string();
    out.files_read.push_back(file);
    const nlohmann::json j = read_json_file(file, "aiter config");
    if (!j.is_object()) throw InputError("aiter config " + file.string() + ": expected an object of M buckets");
    if (r.is_default) {
      out.notes.push_back(name +
                          " not imported: aiter's default file has no N and K to key entries by (ktune's "
                          "lookup falls back to the family's most common config instead)");
      continue;
    }
    if (j.contains("any"))
      out.notes.push_back(name + ": any not imported: ktune's lookup falls back to the nearest tuned M instead");
    for (const auto& [m, bucket] : buckets_of(j, name, out.notes)) {
      const std::string where = "aiter config " + file.string() + ": " + bucket;
      RegistryEntry e;
      e.config = config_of(j.at(bucket), where);
      try {
        family.default_space.check_config(e.config, "config");
      } catch (const InputError& err) {
        throw InputError(where + ": " + err.what());
      }
      e.run = "import";
      e.tuned_at = stamp;
      e.ktune_version = version();
      e.imported_from = "aiter " + name;
      const auto problems =
          expand_shape(family, "M=" + std::to_string(m) + " N=" + std::to_string(r.n) + " K=" + std::to_string(r.k));
      const std::string key = problems.front().local_key();
      if (!seen.insert(key).second) throw InputError(where + ": names the shape " + key + " a second time");
      out.entries.emplace_back(key, std::move(e));
    }
  }
  return out;
}

}  // namespace ktune
