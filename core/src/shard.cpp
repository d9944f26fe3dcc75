#include "ktune/shard.h"

#include <charconv>
#include <limits>

#include "ktune/error.h"

namespace ktune {

namespace {

std::uint64_t fnv1a64(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;
  for (const unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

bool ShardSpec::contains(const std::string& problem_key, const Config& config) const {
  return count <= 1 || fnv1a64(problem_key + "|" + config.key()) % count == index;
}

std::string ShardSpec::to_string() const { return std::to_string(index) + "/" + std::to_string(count); }

ShardSpec parse_shard(const std::string& text) {
  const std::string usage =
      "; give --shard I/N with N >= 1 and I in 0..N-1, e.g. 0/4 (Slurm: "
      "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT with --array=0-3)";
  const auto slash = text.find('/');
  auto number = [&](std::size_t from, std::size_t to, std::uint32_t& out) {
    const auto r = std::from_chars(text.data() + from, text.data() + to, out);
    return from < to && r.ec == std::errc{} && r.ptr == text.data() + to;
  };
  ShardSpec s;
  if (slash == std::string::npos || !number(0, slash, s.index) || !number(slash + 1, text.size(), s.count))
    throw InputError("--shard '" + text + "' is not I/N" + usage);
  if (s.count == 0) throw InputError("--shard " + text + ": N is 0, there is no shard of zero" + usage);
  if (s.index >= s.count)
    throw InputError("--shard " + text + ": I is out of range, shards of " + std::to_string(s.count) + " are 0/" +
                     std::to_string(s.count) + " to " + std::to_string(s.count - 1) + "/" + std::to_string(s.count) +
                     usage);
  return s;
}

std::unique_ptr<Strategy> make_strategy(const StrategySpec& spec, const ShardSpec& shard,
                                        const std::string& problem_key) {
  auto inner = make_strategy(spec);
  if (!shard.sharded()) return inner;
  // Only strategies whose order is fixed up front: the model-guided ones (local, genetic, bayes)
  // choose by results that other shards measure.
  if (spec.kind != "exhaustive" && spec.kind != "random")
    throw InputError("--shard slices the configs a strategy proposes, but the " + spec.kind +
                     " strategy chooses them by results that another shard measures; shard with --strategy exhaustive "
                     "or random");
  return filtered_strategy(std::move(inner),
                           [shard, problem_key](const Config& c) { return shard.contains(problem_key, c); });
}

}  // namespace ktune
