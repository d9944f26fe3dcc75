#pragma once
// `ktune worker` (serve a built-in backend over the worker protocol) and the options of
// `ktune tune` that measure in worker processes: --isolate, --no-isolate, --worker "CMD",
// --devices LIST|all (a worker per device).
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "ktune/backend.h"
#include "ktune/device_pool.h"

namespace ktune::cli {

struct WorkerArgs {
  std::string command;  // --worker "CMD ARGS"
  std::string devices;  // --devices "0,1" | "all"
  bool isolate = false, no_isolate = false;
  double cap_margin_ms = 5000;
};
void add_worker_options(CLI::App* tune, WorkerArgs& args);

struct ServeArgs {
  std::string backend = "cpu";
  int device = 0;
  std::string kernel_spec;
};
CLI::App* add_worker_subcommand(CLI::App& app, ServeArgs& args);
int run_worker(Backend& backend, const ServeArgs& args);

// The backend a tune measures with when it is a worker process (--worker, or --isolate, which
// is on by default for GPU backends); nullptr to measure in this process. `in_process` is the
// built-in backend to isolate: nullptr with --worker, whose command is the whole backend.
std::unique_ptr<Backend> tune_worker_backend(Backend* in_process, int device, const std::string& kernel_spec,
                                             const WorkerArgs& args);

}  // namespace ktune::cli

namespace ktune::cli {

// The devices of one model (one registry device slug), each with its worker.
struct DeviceGroup {
  std::string slug;
  std::vector<Lane> lanes;
};
struct DeviceWorkers {
  int single = -1;  // --devices named one device: its index; the run goes as with --device
  std::vector<std::unique_ptr<Backend>> workers;
  std::vector<DeviceGroup> groups;  // several devices: by model, in device order
};
// The workers of `--devices LIST|all`: `ktune worker --backend B --device I` children of the
// built-in backend, or the --worker command for device I ("{device}" in it replaced by I, or
// " --device I" appended). `device_given`: --device was given too (an InputError).
DeviceWorkers start_device_workers(Backend* built_in, const std::string& kernel_spec, WorkerArgs& args,
                                   bool device_given);

}  // namespace ktune::cli
