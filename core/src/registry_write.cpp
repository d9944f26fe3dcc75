#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "registry_text.h"

namespace ktune {

namespace {

// Writes JSON as nlohmann's dump(2) does: two spaces an indent level, members sorted by key (the
// last of equal keys kept, as json::operator[] keeps it), "key": value, empty containers as {}
// and [].
class Writer {
 public:
  explicit Writer(std::size_t reserve) { out_.reserve(reserve); }
  std::string take() { return std::move(out_); }

  // An object opened at `depth` (its closing brace indented so), closed by the destructor.
  class Object {
   public:
    Object(Writer& w, int depth) : w_(w), depth_(depth) { w_.out_ += '{'; }
    ~Object() {
      if (!first_) w_.line(depth_);
      w_.out_ += '}';
    }
    Object(const Object&) = delete;
    Object& operator=(const Object&) = delete;
    // Writes "key": and returns the writer for the value.
    Writer& key(std::string_view k) {
      if (!first_) w_.out_ += ',';
      first_ = false;
      w_.line(depth_ + 1);
      w_.text(k);
      w_.out_ += ": ";
      return w_;
    }

   private:
    Writer& w_;
    int depth_;
    bool first_ = true;
  };

  void text(std::string_view s) {
    // Plain ASCII as it is; anything to escape or validate (control characters, quotes,
    // backslashes, UTF-8) through nlohmann's own dump, which also throws where it throws.
    const auto plain = [](char c) {
      const auto u = static_cast<unsigned char>(c);
      return u >= 0x20 && u < 0x80 && c != '"' && c != '\\';
    };
    if (std::all_of(s.begin(), s.end(), plain)) {
      out_ += '"';
      out_ += s;
      out_ += '"';
    } else {
      out_ += nlohmann::json(s).dump();
    }
  }
  void number(double x) {
    // nlohmann's Grisu2 digits, not std::to_chars's shortest: they differ in about 1 double in
    // 1,000 (2561371.5147485128, not 2561371.514748513), a changed byte in every saved registry.
    if (!std::isfinite(x)) {
      out_ += "null";
      return;
    }
    char buf[64];
    out_.append(buf, nlohmann::detail::to_chars(buf, buf + sizeof buf, x));
  }
  void integer(std::int64_t x) { out_ += std::to_string(x); }
  void boolean(bool b) { out_ += b ? "true" : "false"; }

  template <class T, class WriteOne>
  void array(const std::vector<T>& values, int depth, WriteOne&& write_one) {
    out_ += '[';
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (i) out_ += ',';
      line(depth + 1);
      write_one(values[i]);
    }
    if (!values.empty()) line(depth);
    out_ += ']';
  }
  template <class V, class WriteOne>
  void sorted_object(const std::vector<std::pair<std::string, V>>& members, int depth, WriteOne&& write_one) {
    std::vector<const std::pair<std::string, V>*> order;
    order.reserve(members.size());
    for (const auto& m : members) order.push_back(&m);
    std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
    Object o(*this, depth);
    for (std::size_t i = 0; i < order.size(); ++i)
      if (i + 1 == order.size() || order[i + 1]->first != order[i]->first) {
        o.key(order[i]->first);
        write_one(order[i]->second);
      }
  }

  // A value kept as JSON (a family's description), as dump(2) writes it at this depth.
  void json_value(const nlohmann::json& j, int depth) {
    const std::string text = j.dump(2);
    for (const char c : text) {
      out_ += c;
      if (c == '\n') out_.append(2 * static_cast<std::size_t>(depth), ' ');
    }
  }

  void line(int depth) {
    out_ += '\n';
    out_.append(2 * static_cast<std::size_t>(depth), ' ');
  }

 private:
  std::string out_;
};

void write_value(Writer& w, const ParamValue& v) {
  switch (v.kind()) {
    case ParamValue::Kind::Int:
      return w.integer(v.as_int());
    case ParamValue::Kind::Bool:
      return w.boolean(v.as_int() != 0);
    case ParamValue::Kind::String:
      return w.text(v.as_string());
  }
}

// The members of RegistryEntry::to_json's "metadata", in the order dump sorts them into.
void write_metadata(Writer& w, const RegistryEntry& e, int depth) {
  Writer::Object o(w, depth);
  const bool searched = e.search_median_ns > 0, sharded = e.tp_size > 1;
  o.key("benchmarking_method").text(e.benchmarking_method);
  if (searched) o.key("chosen_by").text(to_string(e.chosen_by));
  if (e.flags.any()) o.key("flags").array(e.flags.names(), depth + 1, [&](const std::string& s) { w.text(s); });
  if (!e.imported_from.empty()) o.key("imported_from").text(e.imported_from);
  o.key("ktune_version").text(e.ktune_version);
  o.key("run").text(e.run);
  o.key("samples_ns").array(e.samples_ns, depth + 1, [&](double x) { w.number(x); });
  if (searched) o.key("search_median_ns").number(e.search_median_ns);
  if (sharded) o.key("tp_size").integer(e.tp_size);
  if (sharded) o.key("tp_split_dim").text(e.tp_split_dim);
  o.key("tuned_at").text(e.tuned_at);
  if (!e.versions.empty())
    o.key("versions").sorted_object(e.versions, depth + 1, [&](const std::string& s) { w.text(s); });
}

void write_entry(Writer& w, const RegistryEntry& e, int depth) {
  Writer::Object o(w, depth);
  if (!e.conditions.empty()) {
    Writer::Object c(o.key("conditions"), depth + 1);  // a std::map: in dump's order already
    for (const auto& [name, value] : e.conditions) c.key(name).number(value);
  }
  o.key("config").sorted_object(e.config.values(), depth + 1, [&](const ParamValue& v) { write_value(w, v); });
  write_metadata(o.key("metadata"), e, depth + 1);
  Writer::Object stats(o.key("stats"), depth + 1);
  if (!e.measured()) return;
  stats.key("compile_time_s").number(e.compile_time_s);
  stats.key("latency_avg_ns").number(e.latency_avg_ns);
  stats.key("latency_median_ns").number(e.latency_median_ns);
  stats.key("latency_std_ns").number(e.latency_std_ns);
}

}  // namespace

std::string registry_text(const Registry& reg) {
  constexpr std::size_t kBytesPerEntry = 1200;  // a tuned entry with 6 samples: ~1.1 KB
  Writer w(4096 + kBytesPerEntry * reg.size());
  {
    Writer::Object root(w, 0);
    root.key("backend").text(reg.backend());
    root.key("device").text(reg.device());
    {
      Writer::Object entries(root.key("entries"), 1);
      for (const auto& [family, keys] : reg.entries()) {
        Writer::Object f(entries.key(family), 2);
        for (const auto& [key, entry] : keys) write_entry(f.key(key), entry, 3);
      }
    }
    if (!reg.family_descriptions().empty()) {
      Writer::Object families(root.key("families"), 1);
      for (const auto& [family, description] : reg.family_descriptions())
        families.key(family).json_value(description, 2);
    }
    root.key("ktune_registry").integer(kRegistryFormat);
  }
  w.line(0);
  return w.take();
}

}  // namespace ktune
