#pragma once
// WorkerBackend: a Backend whose kernels are compiled, validated and timed in a worker process
// that speaks the worker protocol (worker_protocol.h). The tuner drives it like any backend.
// A config that crashes the worker, breaks the protocol or runs past the hard cap
// (max_ms_per_config plus a margin) is recorded `crashed` or `timeout` with what is known (the
// signal, the last stderr lines); the worker is started again for the next config. What the
// worker reports is checked, not believed: its validation numbers against the run's tolerance
// (else `wrong_result`), its samples for being times, positive and finite (else `crashed`).
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ktune/backend.h"
#include "ktune/worker_protocol.h"

namespace ktune::worker {

struct WorkerOptions {
  std::vector<std::string> argv;  // the worker's command; `shell_command` builds it from one string
  // The folder it starts in, absolute; empty: ktune's working folder. A command recorded in a run
  // starts where it ran then, so that its relative paths name the same files.
  std::string working_directory;
  double hello_timeout_s = 120;  // a Python worker importing a GPU stack needs a while
  double prepare_timeout_s = 600;
  // The hard cap of one measure: validation, warm-up and samples within max_ms_per_config, plus
  // this margin for validation and process overheads. Past it the worker is killed.
  double cap_margin_ms = 5000;

  // The command as the user gave it (shell_command's string, else argv joined), for messages.
  std::string command() const;
};

// "python3 w.py --x" -> {"/bin/sh", "-c", "exec python3 w.py --x"}: the shell's quoting, one process.
std::vector<std::string> shell_command(const std::string& command);

class Connection;

class WorkerBackend : public Backend {
 public:
  // Starts the worker and reads its hello. Throws RunError when it cannot start or dies before
  // its hello, ProtocolError (a RunError's message) for a version or hello it does not understand.
  explicit WorkerBackend(WorkerOptions options);
  ~WorkerBackend() override;

  std::string name() const override;
  std::vector<DeviceInfo> devices() override;
  std::vector<KernelFamily> families() const override;
  std::vector<std::pair<std::string, std::string>> versions() const override;
  // The family the worker loaded from this spec (its hello names the spec as the source).
  KernelFamily load_family_spec(const std::filesystem::path& spec) override;
  std::unique_ptr<ProblemSession> open(const DeviceInfo& device, const KernelFamily& family, const Problem& problem,
                                       std::uint64_t seed) override;

  const Hello& hello() const { return hello_; }
  int restarts() const;
  int current_pid() const;  // the live worker's pid, -1 when none is running
  const WorkerOptions& options() const { return options_; }

  // The live worker, started again when the last one died or was killed. Thread-safe.
  std::shared_ptr<Connection> connection();

 private:
  WorkerOptions options_;
  Hello hello_;
  mutable std::mutex mutex_;
  std::shared_ptr<Connection> live_;
  int restarts_ = 0;
};

}  // namespace ktune::worker
