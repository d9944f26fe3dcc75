#include <cstdio>
#include <deque>
#include <mutex>
#include <string>
#include <utility>

#include "space_solver.h"

namespace ktune::detail {

namespace {

// Enough for every problem of a run on every device kind of a process, in bounded memory: the
// oldest entries go once the valid configs held pass kMaxCachedConfigs (a config of ten
// parameters takes about 1 KB), and a larger result is solved again instead of held.
constexpr std::size_t kCacheEntries = 32;
constexpr std::size_t kMaxCachedConfigs = 200'000;

// Everything enumeration reads, spelled so that different spaces or contexts differ: each
// parameter's name and values, each constraint, an explicit list's configs, then each variable
// with every bit of its value. Descriptions are left out (the report names expressions), and
// to_json() would cost as much as a solve.
std::string cache_key(const SearchSpace& space, const Variables& context) {
  std::string key;
  for (const auto& p : space.parameters()) {
    key += p.name;
    for (const auto& v : p.values) key += (v.is_string() ? "\x1f'" : "\x1f") + v.text();
    key += '\n';
  }
  for (const auto& c : space.constraints()) key += c.expr + '\n';
  for (const auto& c : space.configs()) key += c.key() + '\n';
  char number[64];
  for (const auto& [name, value] : context) {
    std::snprintf(number, sizeof number, "=%a\n", value);
    key += name + number;
  }
  return key;
}

struct Cache {
  std::mutex mutex;
  std::deque<std::pair<std::string, std::shared_ptr<const SolvedSpace>>> entries;  // newest first
  std::size_t configs = 0;                                                         // valid configs held
};

Cache& cache() {
  static Cache c;
  return c;
}

}  // namespace

std::shared_ptr<const SolvedSpace> solve_space_cached(const SearchSpace& space, const Variables& context) {
  std::string key = cache_key(space, context);
  Cache& c = cache();
  {
    const std::lock_guard lock(c.mutex);
    for (auto it = c.entries.begin(); it != c.entries.end(); ++it)
      if (it->first == key) {
        auto hit = it->second;
        c.entries.erase(it);
        c.entries.emplace_front(std::move(key), hit);
        return hit;
      }
  }
  // A hit was validated with its context when it was solved. Solved outside the lock: two
  // threads asking at once both solve, and the second result wins.
  space.validate(context);
  std::optional<SolvedSpace> solved = solve_space(space, context);
  if (!solved) return nullptr;
  auto result = std::make_shared<const SolvedSpace>(std::move(*solved));
  if (result->valid.size() <= kMaxCachedConfigs) {
    const std::lock_guard lock(c.mutex);
    c.entries.emplace_front(std::move(key), result);
    c.configs += result->valid.size();
    while (c.entries.size() > kCacheEntries || c.configs > kMaxCachedConfigs) {
      c.configs -= c.entries.back().second->valid.size();
      c.entries.pop_back();
    }
  }
  return result;
}

}  // namespace ktune::detail
