#pragma once
// The fast path of SearchSpace::enumerate: finds the valid configs of a space by backtracking
// over its parameters, each constraint compiled once and checked as soon as its parameters are
// bound, independent parameter groups solved apart and multiplied at the end. It gives exactly
// what the brute-force walk gives: the same valid configs in the same (odometer) order, and the
// same counts per constraint (each pruned config counted with the first constraint, in
// declaration order, that it fails). See docs/search-space.md for why and how.
#include <memory>
#include <optional>
#include <vector>

#include "ktune/config.h"
#include "ktune/search_space.h"

namespace ktune::detail {

struct SolvedSpace {
  std::vector<Config> valid;
  PruneReport report;
};

// nullopt when a constraint cannot be evaluated on some partial config (division by zero, NaN):
// the caller then walks the space as before, which either throws the error naming the config
// the odometer meets first, or finds that an earlier constraint prunes every such config.
// `space` is validated against `context` by the caller.
std::optional<SolvedSpace> solve_space(const SearchSpace& space, const Variables& context);

// solve_space through a cache of recent results per (space, context: problem and device
// variables), shared by everything in the process that asks for the same space: the tuner's plan,
// each device's session sizing its buffers, a merge, the registry's fallback. Validates the space
// against the context first (SearchSpace::validate's InputError); nullptr where solve_space gives
// nullopt. Thread-safe.
std::shared_ptr<const SolvedSpace> solve_space_cached(const SearchSpace& space, const Variables& context);

}  // namespace ktune::detail
