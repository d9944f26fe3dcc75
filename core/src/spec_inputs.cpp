#include "ktune/spec_inputs.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "ktune/array_file.h"
#include "ktune/error.h"
#include "ktune/host_data.h"
#include "ktune/moe_routing.h"

namespace ktune {

namespace {

struct Generator {
  const KernelSpec& spec;
  const Problem& p;
  SpecInputs& out;
  std::map<std::string, MoeRouting> routings_;  // by argument name, for the expert views after them

  std::string culprit(const SpecArgument& a) const { return spec.family().source + ": argument '" + a.name + "'"; }

  // An init expression for this problem: "${...}" substituted, evaluated with the default config
  // (generated data is the same for every config) and what earlier arguments published.
  std::int64_t integer(const SpecArgument& a, const std::string& key, const std::string& expr) const {
    const Config& c = spec.family().default_config;
    double v = 0;
    try {
      v = Expression(spec.substitute(expr, p, c)).eval(spec.variables(p, c, out.variables));
    } catch (const InputError& e) {
      throw InputError(culprit(a) + ": init." + key + " \"" + expr + "\": " + e.what());
    }
    if (!std::isfinite(v) || v != std::floor(v) || std::abs(v) > 9e15)
      throw InputError(culprit(a) + ": init." + key + " \"" + expr + "\" is " + std::to_string(v) +
                       " for this problem, expected an integer");
    return static_cast<std::int64_t>(v);
  }

  std::vector<unsigned char> lengths(const SpecArgument& a, ElemType t, std::uint64_t count, std::uint64_t seed) {
    if (t != ElemType::I32 && t != ElemType::I64)
      throw InputError(culprit(a) + ": lengths are i32 or i64, not " + to_string(t));
    const std::int64_t lo = integer(a, "lengths.min", a.init.min), hi = integer(a, "lengths.max", a.init.max);
    const std::int64_t type_max =
        t == ElemType::I32 ? std::numeric_limits<std::int32_t>::max() : std::numeric_limits<std::int64_t>::max();
    if (lo < 1 || lo > hi || hi > type_max)
      throw InputError(culprit(a) + ": init.lengths has min " + std::to_string(lo) + " (\"" + a.init.min + "\"), max " +
                       std::to_string(hi) + " (\"" + a.init.max + "\") for " + p.key() +
                       ": lengths need 1 <= min <= max" +
                       (hi > type_max ? " and max within " + std::string(to_string(t)) : ""));
    std::vector<unsigned char> data = generate_lengths(t, count, lo, hi, seed);
    double total = 0;
    for (std::uint64_t i = 0; i < count; ++i) total += load_elem(data.data(), t, i);
    out.variables[a.published()] = total;
    return data;
  }

  std::vector<unsigned char> page_table(const SpecArgument& a, ElemType t, std::uint64_t count, std::uint64_t seed) {
    if (t != ElemType::I32) throw InputError(culprit(a) + ": a page table is i32, not " + to_string(t));
    const HostInput& in = out.inputs.at(a.init.lengths);
    const std::uint64_t rows = out.counts.at(a.init.lengths);
    if (rows == 0 || count % rows != 0)
      throw InputError(culprit(a) + ": count " + std::to_string(count) + " (\"" + a.count +
                       "\") is not a multiple of " + std::to_string(rows) + ", the sequences of '" + a.init.lengths +
                       "': the table holds one row of pages per sequence");
    const std::int64_t page_size = integer(a, "page_table.page_size", a.init.page_size);
    if (page_size < 1)
      throw InputError(culprit(a) + ": init.page_table.page_size \"" + a.init.page_size + "\" is " +
                       std::to_string(page_size) + ", expected at least 1");
    std::vector<std::int64_t> lengths(rows);
    for (std::uint64_t b = 0; b < rows; ++b)
      lengths[b] = static_cast<std::int64_t>(load_elem(in.data.data(), in.type, b));
    PageTable table;
    try {
      table = generate_page_table(lengths, static_cast<std::int64_t>(count / rows), page_size, a.init.shuffle, seed);
    } catch (const InputError& e) {
      throw InputError(culprit(a) + " (count \"" + a.count + "\" = " + std::to_string(count) + ", over '" +
                       a.init.lengths + "'): " + e.what());
    }
    out.variables[a.published()] = static_cast<double>(table.pages);
    return bytes_of(table.table);
  }

  // Drawn from the workload seed and the counts alone (moe_routing_seed), not from the argument's
  // seed: the key's other fields (pass, hidden, dtype, a tp split) would route one layer's passes apart.
  std::vector<unsigned char> routing(const SpecArgument& a, ElemType t, std::uint64_t count,
                                     std::uint64_t workload_seed) {
    if (t != ElemType::I32) throw InputError(culprit(a) + ": a routing is i32, not " + to_string(t));
    const std::int64_t experts = integer(a, "routing.experts", a.init.experts);
    const std::int64_t topk = integer(a, "routing.topk", a.init.topk);
    if (topk < 1 || count % static_cast<std::uint64_t>(topk) != 0)
      throw InputError(culprit(a) + ": count " + std::to_string(count) + " (\"" + a.count +
                       "\") is not a multiple of topk " + std::to_string(topk) + " (\"" + a.init.topk +
                       "\"): a routing holds topk experts per token");
    try {
      const long tokens = static_cast<long>(count / topk);
      routings_[a.name] =
          generate_moe_routing(experts, tokens, topk, moe_routing_seed(workload_seed, experts, tokens, topk));
    } catch (const InputError& e) {
      throw InputError(culprit(a) + " for " + p.key() + ": " + e.what());
    }
    const MoeRouting& r = routings_.at(a.name);
    out.variables[a.published()] = static_cast<double>(r.busiest());
    return bytes_of(r.expert);
  }

  // A routing seen in expert order: its offsets, or its rows' (or tokens') indices.
  std::vector<unsigned char> expert_view(const SpecArgument& a, ElemType t, std::uint64_t count) const {
    const bool offsets = a.init.kind == ArgInit::Kind::ExpertOffsets;
    const char* what = offsets ? "expert_offsets" : "expert_order";
    if (t != ElemType::I32) throw InputError(culprit(a) + ": " + what + " is i32, not " + to_string(t));
    const MoeRouting& r = routings_.at(a.init.routing);
    std::vector<std::int32_t> v;
    if (offsets)
      v.assign(r.offset.begin(), r.offset.end());
    else
      v = a.init.order_tokens ? r.token : r.row;
    if (count != v.size())
      throw InputError(culprit(a) + ": count " + std::to_string(count) + " (\"" + a.count + "\") for " + p.key() +
                       ", but '" + a.init.routing + "' has " + std::to_string(v.size()) + " " +
                       (offsets ? "offsets (experts + 1)" : "routed rows (tokens * topk)"));
    return bytes_of(v);
  }

  static std::vector<unsigned char> bytes_of(const std::vector<std::int32_t>& v) {
    std::vector<unsigned char> data(v.size() * sizeof(std::int32_t));
    if (!v.empty()) std::memcpy(data.data(), v.data(), data.size());
    return data;
  }

  std::vector<unsigned char> from_file(const SpecArgument& a, ElemType t, std::uint64_t count) const {
    try {
      return load_array_file(a.init.file, a.init.file_dtype, t, count);
    } catch (const InputError& e) {
      throw InputError(culprit(a) + " (count \"" + a.count + "\" for " + p.key() + "): " + e.what());
    }
  }

  std::vector<unsigned char> drawn(const SpecArgument& a, ElemType t, std::uint64_t count, std::uint64_t seed) const {
    try {
      return generate(t, count, a.init_for(p), seed);
    } catch (const InputError& e) {
      throw InputError(culprit(a) + " for " + p.key() + ": " + e.what());
    }
  }

  void argument(const SpecArgument& a, std::uint64_t seed) {
    const std::uint64_t count = spec.max_arg_count(a, p, out.variables);
    out.counts[a.name] = count;
    if (a.role != ArgRole::Input) return;
    const ElemType t = spec.arg_type(a, p, spec.family().default_config);
    const std::uint64_t arg_seed = seed ^ fnv1a64(p.key() + "/" + a.name);
    std::vector<unsigned char> data;
    if (a.init.kind == ArgInit::Kind::Lengths)
      data = lengths(a, t, count, arg_seed);
    else if (a.init.kind == ArgInit::Kind::PageTable)
      data = page_table(a, t, count, arg_seed);
    else if (a.init.kind == ArgInit::Kind::Routing)
      data = routing(a, t, count, seed);
    else if (a.init.kind == ArgInit::Kind::ExpertOffsets || a.init.kind == ArgInit::Kind::ExpertOrder)
      data = expert_view(a, t, count);
    else if (a.init.kind == ArgInit::Kind::File)
      data = from_file(a, t, count);
    else
      data = drawn(a, t, count, arg_seed);
    out.inputs[a.name] = {t, std::move(data)};
  }
};

}  // namespace

SpecInputs generate_spec_inputs(const KernelSpec& spec, const Problem& p, const Variables& device, std::uint64_t seed) {
  SpecInputs out;
  out.variables = device;
  Generator g{spec, p, out};
  for (const auto& a : spec.arguments())
    if (a.is_buffer() && a.role != ArgRole::Workspace) g.argument(a, seed);
  return out;
}

}  // namespace ktune
