#include "replay_command.h"

#include "ktune/error.h"

namespace ktune::cli {

Replay prepare_replay(const std::string& run_dir, const std::vector<std::unique_ptr<Backend>>& backends,
                      const StrategySpec& strategy, const std::vector<std::string>& arguments) {
  make_strategy(strategy);  // validates the name before anything runs
  Replay r;
  r.backend = ReplayBackend::for_run(run_dir, backends);
  r.device = r.backend->metadata().device;
  r.request = r.backend->request(strategy);
  r.request.arguments = arguments;
  return r;
}

}  // namespace ktune::cli
