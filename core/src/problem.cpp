#include "ktune/problem.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ktune/error.h"
#include "ktune/json_read.h"
#include "ktune/kernel_family.h"

namespace ktune {

std::string to_string(TpSplitDim d) {
  switch (d) {
    case TpSplitDim::Out:
      return "out";
    case TpSplitDim::In:
      return "in";
    case TpSplitDim::Heads:
      return "heads";
    case TpSplitDim::None:
      break;
  }
  return "none";
}

TpSplitDim tp_split_dim_from_string(const std::string& s) {
  if (s == "out") return TpSplitDim::Out;
  if (s == "in") return TpSplitDim::In;
  if (s == "heads") return TpSplitDim::Heads;
  if (s == "none" || s.empty()) return TpSplitDim::None;
  throw InputError("--tp-split-dim must be 'out' (column parallel), 'in' (row parallel) or 'heads' (attention), got '" +
                   s + "'");
}

namespace {

bool parse_int(const std::string& s, std::int64_t& out) {
  return !s.empty() && std::from_chars(s.data(), s.data() + s.size(), out).ec == std::errc{} &&
         std::to_string(out) == s;
}

// Takes the next comma-separated item off the front of `rest`.
std::string_view next_item(std::string_view& rest) {
  const auto comma = rest.find(',');
  const std::string_view item = rest.substr(0, comma);
  rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
  return item;
}

int sign(int c) { return (c > 0) - (c < 0); }

// Leading integers by value (compared as digit strings, so no size overflows), then the rest.
int compare_values(std::string_view a, std::string_view b) {
  const auto digits = [](std::string_view s) { return std::min(s.find_first_not_of("0123456789"), s.size()); };
  const std::size_t da = digits(a), db = digits(b);
  if (da > 0 && db > 0) {
    std::string_view na = a.substr(0, da), nb = b.substr(0, db);
    while (na.size() > 1 && na.front() == '0') na.remove_prefix(1);
    while (nb.size() > 1 && nb.front() == '0') nb.remove_prefix(1);
    if (na.size() != nb.size()) return na.size() < nb.size() ? -1 : 1;
    if (const int c = na.compare(nb)) return sign(c);
    a.remove_prefix(da);
    b.remove_prefix(db);
  }
  return sign(a.compare(b));
}

}  // namespace

int compare_keys(std::string_view a, std::string_view b) {
  for (std::string_view ra = a, rb = b; !ra.empty() || !rb.empty();) {
    if (ra.empty() || rb.empty()) return ra.empty() ? -1 : 1;  // a prefix of fields comes first
    const std::string_view ia = next_item(ra), ib = next_item(rb);
    const auto ea = std::min(ia.find('='), ia.size()), eb = std::min(ib.find('='), ib.size());
    if (const int c = ia.substr(0, ea).compare(ib.substr(0, eb))) return sign(c);
    if (const int c = compare_values(ia.substr(std::min(ea + 1, ia.size())), ib.substr(std::min(eb + 1, ib.size()))))
      return c;
  }
  // Equal as numbers ("M=016" and "M=16") but different keys must not be equivalent in a map.
  return sign(a.compare(b));
}

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

std::string Problem::local_key() const {
  std::string out;
  for (const auto& [k, v] : fields) {
    if (!out.empty()) out += ',';
    out += k + '=' + v;
  }
  return out;
}

std::string Problem::key() const {
  std::string out = local_key();
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
  if (!j.is_object() || !j.contains("family") || !j.contains("key") || !j.at("family").is_string() ||
      !j.at("key").is_string())
    throw InputError("a problem needs \"family\" and \"key\" strings, got " + json_excerpt(j));
  return from_key(j.at("family").get<std::string>(), j.at("key").get<std::string>());
}

std::vector<Problem> expand_shape(const KernelFamily& family, const std::string& shape, int tp_size, TpSplitDim split) {
  if (tp_size < 1) throw InputError("--tp-size must be at least 1");
  const TpSplit* tp = tp_size > 1 ? &family.resolve_tp_split(split) : nullptr;

  // Errors quote the start of the shape, not a list of 100,000 values.
  const std::string quoted = shape.size() > 60 ? shape.substr(0, 57) + "..." : shape;
  std::map<std::string, std::vector<std::string>> given;
  std::stringstream ss(shape);
  std::string token;
  while (ss >> token) {
    const auto eq = token.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError("shape '" + quoted + "': '" + token + "' is not NAME=VALUE[,VALUE...]");
    const std::string name = token.substr(0, eq);
    const KeyField* f = family.field(name);
    if (!f) {
      std::string known;
      for (const auto& kf : family.key_fields) known += (known.empty() ? "" : ", ") + kf.name;
      throw InputError("shape '" + quoted + "': " + family.name + " has no field '" + name + "' (fields: " + known +
                       ")");
    }
    if (given.count(name)) throw InputError("shape '" + quoted + "': field '" + name + "' given twice");
    std::vector<std::string> values;
    std::stringstream vs(token.substr(eq + 1));
    std::string v;
    while (std::getline(vs, v, ',')) {
      if (f->numeric) {
        std::int64_t n = 0;
        if (!parse_int(v, n) || n < 1)
          throw InputError("shape '" + quoted + "': " + name + "=" + v + " must be a positive integer");
      } else if (!f->choices.empty() && std::find(f->choices.begin(), f->choices.end(), v) == f->choices.end()) {
        std::string ch;
        for (const auto& c : f->choices) ch += (ch.empty() ? "" : ", ") + c;
        throw InputError("shape '" + quoted + "': " + name + "=" + v + " is not supported (choices: " + ch + ")");
      }
      values.push_back(v);
    }
    if (values.empty()) throw InputError("shape '" + quoted + "': field '" + name + "' has no value");
    given[name] = std::move(values);
  }

  // Counted before anything is built: a 100,000-value list must fail at once, not after planning.
  std::uint64_t count = 1;
  for (const auto& [name, values] : given) {
    count *= values.size();
    if (count > kMaxProblems)
      throw InputError("shape '" + quoted + "' expands to more than " + std::to_string(kMaxProblems) +
                       " problems; tune fewer values per field (e.g. powers of two: the registry's lookup rounds a "
                       "missing size up to the next one)");
  }

  std::vector<Problem> out(1);
  out[0].family = family.name;
  out[0].tp_size = tp_size;
  out[0].tp_split_dim = tp ? tp->dim : TpSplitDim::None;
  for (const auto& f : family.key_fields) {
    std::vector<std::string> values;
    if (auto it = given.find(f.name); it != given.end())
      values = it->second;
    else if (!f.default_value.empty())
      values = {f.default_value};
    else
      throw InputError("shape '" + quoted + "' is missing " + f.name + " (" + f.help + "); e.g. --shape \"" + f.name +
                       "=4096 ...\"");
    std::vector<Problem> next;
    for (const auto& p : out)
      for (const auto& v : values) {
        Problem q = p;
        q.fields.emplace_back(f.name, v);
        next.push_back(std::move(q));
      }
    out = std::move(next);
  }

  if (tp)
    for (auto& p : out)
      for (const auto& f : tp->fields) p.set(f.name, std::to_string(f.local(p.num(f.name), tp_size)));
  for (const auto& p : out) family.check_shape(p);
  return out;
}

std::vector<Problem> expand_shapes(const KernelFamily& family, const std::vector<std::string>& shapes, int tp_size,
                                   TpSplitDim split) {
  std::vector<Problem> problems;
  for (const auto& s : shapes)
    for (auto& p : expand_shape(family, s, tp_size, split)) problems.push_back(std::move(p));
  return problems;
}

}  // namespace ktune
