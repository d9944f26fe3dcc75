#pragma once
// Shard: a deterministic slice of a run's (problem x config) pairs, so that N machines (a Slurm
// job array) tune one run between them and `ktune merge` puts the pieces back together.
//
// Config C of problem P belongs to shard I of N when FNV-1a-64(P.key() + "|" + C.key()) mod N
// == I. The slice depends on nothing but the two keys: not on the order of the shapes, the
// machine, the thread count or how far a run got, so a resumed shard measures the same slice,
// and the N slices of a run are disjoint and together are the unsharded run's configs.
#include <cstdint>
#include <memory>
#include <string>

#include "ktune/config.h"
#include "ktune/strategy.h"

namespace ktune {

struct ShardSpec {
  std::uint32_t index = 0;
  std::uint32_t count = 1;  // 1: not sharded

  bool sharded() const { return count > 1; }
  bool contains(const std::string& problem_key, const Config& config) const;
  std::string to_string() const;  // "1/3"
  bool operator==(const ShardSpec&) const = default;
};

// "I/N", I in 0..N-1 (SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT with --array=0-(N-1)). Throws
// InputError naming what is wrong and what to give instead.
ShardSpec parse_shard(const std::string& text);

// The strategy a run uses for one problem: `spec`'s, keeping only the configs of `shard`. The
// slice is taken from the configs the strategy would propose unsharded, so the shards of a random
// strategy measure the same sample between them. A model-guided strategy (local, genetic, bayes)
// chooses by results a shard does not see: sharding it is an InputError.
std::unique_ptr<Strategy> make_strategy(const StrategySpec& spec, const ShardSpec& shard,
                                        const std::string& problem_key);

}  // namespace ktune
