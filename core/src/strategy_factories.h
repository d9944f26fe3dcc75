#pragma once
// The strategies that live in their own sources, for make_strategy.
#include <cstdint>
#include <memory>

#include "ktune/strategy.h"

namespace ktune::detail {

std::unique_ptr<Strategy> make_genetic_strategy(std::size_t budget, std::uint64_t seed);
std::unique_ptr<Strategy> make_bayes_strategy(std::size_t budget, std::uint64_t seed);

}  // namespace ktune::detail
