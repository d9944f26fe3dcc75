#pragma once
// `ktune tune --replay RUN_DIR`: a recorded run answers the strategy instead of a device.
#include <memory>
#include <string>
#include <vector>

#include "ktune/replay_backend.h"

namespace ktune::cli {

struct Replay {
  std::unique_ptr<ReplayBackend> backend;
  DeviceInfo device;
  TuneRequest request;  // run_dir left empty: the caller names where the replay is saved
};

// The recorded run as a backend (ReplayBackend::for_run) and the request that replays it with
// `strategy`. Throws InputError for an unreadable run or an unknown strategy.
Replay prepare_replay(const std::string& run_dir, const std::vector<std::unique_ptr<Backend>>& backends,
                      const StrategySpec& strategy, const std::vector<std::string>& arguments);

}  // namespace ktune::cli
