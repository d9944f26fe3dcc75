#pragma once
// `ktune worker` (serve a built-in backend over the worker protocol) and the options of
// `ktune tune` that measure in a worker process: --isolate, --no-isolate, --worker "CMD".
#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "ktune/backend.h"

namespace ktune::cli {

struct WorkerArgs {
  std::string command;     // --worker "CMD ARGS"
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
