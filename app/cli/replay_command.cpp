#include "replay_command.h"

#include "ktune/error.h"

namespace ktune::cli {

namespace {

std::optional<KernelFamily> known_family(const RunMetadata& m, const std::vector<std::unique_ptr<Backend>>& backends) {
  for (const auto& b : backends)
    if (b->name() == m.backend)
      for (const auto& f : b->families())
        if (f.name == m.family) return f;
  return std::nullopt;
}

}  // namespace

Replay prepare_replay(const std::string& run_dir, const std::vector<std::unique_ptr<Backend>>& backends,
                      const StrategySpec& strategy, const std::vector<std::string>& arguments) {
  make_strategy(strategy);  // validates the name before anything runs
  Replay r;
  const RunMetadata m = RunStore::read_metadata(run_dir);
  r.backend = std::make_unique<ReplayBackend>(run_dir, known_family(m, backends));
  r.device = r.backend->metadata().device;
  r.request = r.backend->request(strategy);
  r.request.arguments = arguments;
  return r;
}

}  // namespace ktune::cli
