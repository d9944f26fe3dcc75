#include "ktune/problem.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ktune/error.h"
#include "ktune/kernel_family.h"

namespace ktune {

std::string to_string(TpSplitDim d) {
  switch (d) {
    case TpSplitDim::Out: return "out";
    case TpSplitDim::In: return "in";
    case TpSplitDim::None: break;
  }
  return "none";
}

TpSplitDim tp_split_dim_from_string(const std::string& s) {
  if (s == "out") return TpSplitDim::Out;
  if (s == "in") return TpSplitDim::In;
  if (s == "none" || s.empty()) return TpSplitDim::None;
  throw InputError("--tp-split-dim must be 'out' (column parallel) or 'in' (row parallel), got '" + s + "'");
}

namespace {

bool parse_int(const std::string& s, std::int64_t& out) {
  return !s.empty() && std::from_chars(s.data(), s.data() + s.size(), out).ec == std::errc{} &&
         std::to_string(out) == s;
}

}  // namespace

const std::string& Problem::field(const std::string& name) const {
  for (const auto& [k, v] : fields)
    if (k == name) return v;
  throw InputError("problem " + key() + " has no field '" + name + "'");
}

std::int64_t Problem::num(const std::string& name) const {
  const std::string& v = field(name);
  std::int64_t out = 0;
  if (!parse_int(v, out)) throw InputError("problem field " + name + "=" + v + " is not an integer");
  return out;
}

void Problem::set(const std::string& name, std::string value) {
  for (auto& [k, v] : fields)
    if (k == name) {
      v = std::move(value);
      return;
    }
  fields.emplace_back(name, std::move(value));
}

std::string Problem::key() const {
  std::string out;
  for (const auto& [k, v] : fields) {
    if (!out.empty()) out += ',';
    out += k + '=' + v;
  }
  if (tp_size > 1) out += ",tp=" + std::to_string(tp_size) + "/" + to_string(tp_split_dim);
  return out;
}

Problem Problem::from_key(const std::string& family, const std::string& key) {
  Problem p;
  p.family = family;
  std::stringstream ss(key);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw InputError("malformed problem key '" + key + "': expected NAME=VALUE pairs separated by commas");
    const std::string name = item.substr(0, eq), value = item.substr(eq + 1);
    if (name == "tp") {
      const auto slash = value.find('/');
      std::int64_t n = 0;
      if (slash == std::string::npos || !parse_int(value.substr(0, slash), n) || n < 1)
        throw InputError("malformed tp in problem key '" + key + "': expected tp=N/out or tp=N/in");
      p.tp_size = static_cast<int>(n);
      p.tp_split_dim = tp_split_dim_from_string(value.substr(slash + 1));
    } else {
      p.fields.emplace_back(name, value);
    }
  }
  if (p.fields.empty()) throw InputError("empty problem key");
  return p;
}

nlohmann::json Problem::to_json() const {
  nlohmann::json f = nlohmann::json::object();
  for (const auto& [k, v] : fields) {
    std::int64_t n = 0;
    if (parse_int(v, n))
      f[k] = n;
    else
      f[k] = v;
  }
  nlohmann::json j{{"family", family}, {"key", key()}, {"fields", f}};
  if (tp_size > 1) {
    j["tp_size"] = tp_size;
    j["tp_split_dim"] = to_string(tp_split_dim);
  }
  return j;
}

Problem Problem::from_json(const nlohmann::json& j) {
  // The key keeps the field order (JSON objects do not); the fields object is for readers.
  if (!j.is_object() || !j.contains("family") || !j.contains("key"))
    throw InputError("a problem needs \"family\" and \"key\", got " + j.dump());
  return from_key(j.at("family").get<std::string>(), j.at("key").get<std::string>());
}

std::vector<Problem> expand_shape(const KernelFamily& family, const std::string& shape, int tp_size, TpSplitDim split) {
  if (tp_size < 1) throw InputError("--tp-size must be at least 1");
  if (tp_size > 1 && split == TpSplitDim::None)
    throw InputError("--tp-size " + std::to_string(tp_size) + " needs --tp-split-dim out (column parallel) or in (row parallel)");

  std::map<std::string, std::vector<std::string>> given;
  std::stringstream ss(shape);
  std::string token;
  while (ss >> token) {
    const auto eq = token.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError("shape '" + shape + "': '" + token + "' is not NAME=VALUE[,VALUE...]");
    const std::string name = token.substr(0, eq);
    const KeyField* f = family.field(name);
    if (!f) {
      std::string known;
      for (const auto& kf : family.key_fields) known += (known.empty() ? "" : ", ") + kf.name;
      throw InputError("shape '" + shape + "': " + family.name + " has no field '" + name + "' (fields: " + known + ")");
    }
    if (given.count(name)) throw InputError("shape '" + shape + "': field '" + name + "' given twice");
    std::vector<std::string> values;
    std::stringstream vs(token.substr(eq + 1));
    std::string v;
    while (std::getline(vs, v, ',')) {
      if (f->numeric) {
        std::int64_t n = 0;
        if (!parse_int(v, n) || n < 1)
          throw InputError("shape '" + shape + "': " + name + "=" + v + " must be a positive integer");
      } else if (!f->choices.empty() && std::find(f->choices.begin(), f->choices.end(), v) == f->choices.end()) {
        std::string ch;
        for (const auto& c : f->choices) ch += (ch.empty() ? "" : ", ") + c;
        throw InputError("shape '" + shape + "': " + name + "=" + v + " is not supported (choices: " + ch + ")");
      }
      values.push_back(v);
    }
    if (values.empty()) throw InputError("shape '" + shape + "': field '" + name + "' has no value");
    given[name] = std::move(values);
  }

  std::vector<Problem> out(1);
  out[0].family = family.name;
  out[0].tp_size = tp_size;
  out[0].tp_split_dim = tp_size > 1 ? split : TpSplitDim::None;
  for (const auto& f : family.key_fields) {
    std::vector<std::string> values;
    if (auto it = given.find(f.name); it != given.end())
      values = it->second;
    else if (!f.default_value.empty())
      values = {f.default_value};
    else
      throw InputError("shape '" + shape + "' is missing " + f.name + " (" + f.help + "); e.g. --shape \"" + f.name + "=4096 ...\"");
    std::vector<Problem> next;
    for (const auto& p : out)
      for (const auto& v : values) {
        Problem q = p;
        q.fields.emplace_back(f.name, v);
        next.push_back(std::move(q));
      }
    out = std::move(next);
  }

  if (tp_size > 1) {
    const std::string& dim = split == TpSplitDim::Out ? family.tp_out_field : family.tp_in_field;
    if (dim.empty()) throw InputError(family.name + " does not support --tp-split-dim " + to_string(split));
    for (auto& p : out) {
      const std::int64_t global = p.num(dim);
      if (global % tp_size != 0)
        throw InputError(dim + "=" + std::to_string(global) + " is not divisible by --tp-size " + std::to_string(tp_size));
      p.set(dim, std::to_string(global / tp_size));
    }
  }
  return out;
}

}  // namespace ktune
