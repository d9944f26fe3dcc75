#include "worker_command.h"

#include <unistd.h>

#include <climits>

#include "ktune/error.h"
#include "ktune/worker_client.h"
#include "ktune/worker_server.h"

namespace ktune::cli {

void add_worker_options(CLI::App* tune, WorkerArgs& a) {
  tune->add_option("--worker", a.command,
                   "Measure in this worker program (it speaks docs/worker-protocol.md), run through /bin/sh, e.g. "
                   "\"python3 examples/workers/numpy_matmul.py\" or \"ssh gpu1 ktune worker --backend cuda\"; "
                   "the family and its space come from the worker's hello");
  tune->add_flag("--isolate", a.isolate,
                 "Measure in a `ktune worker` child process: a config that crashes or hangs kills only the worker, is "
                 "recorded crashed/timeout, and the run goes on (default for GPU backends)");
  tune->add_flag("--no-isolate", a.no_isolate, "Measure in this process (default for the cpu backend)");
  tune->add_option("--hang-margin-ms", a.cap_margin_ms,
                   "Worker runs: a config unanswered after --max-ms-per-config plus this margin is killed as a timeout")
      ->capture_default_str();
}

CLI::App* add_worker_subcommand(CLI::App& app, ServeArgs& s) {
  auto* w = app.add_subcommand("worker", "Serve a built-in backend over the worker protocol on stdin/stdout "
                                         "(what `tune --isolate` starts; see docs/worker-protocol.md)");
  w->add_option("--backend,-b", s.backend, "Backend to serve: cpu, cuda, hip")->capture_default_str();
  w->add_option("--device", s.device, "Device index within the backend")->capture_default_str();
  w->add_option("--kernel-spec", s.kernel_spec, "Also offer the family of this kernel spec (GPU backends)");
  return w;
}

int run_worker(Backend& backend, const ServeArgs& s) {
  // The protocol owns the real stdout; anything else printing to fd 1 lands on stderr.
  const int protocol_out = dup(STDOUT_FILENO);
  if (protocol_out < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) throw RunError("cannot set up the worker's stdout");
  return worker::serve(backend, {s.device, s.kernel_spec, "ktune worker"}, STDIN_FILENO, protocol_out);
}

namespace {

std::string self_executable() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw RunError("cannot find the ktune executable (/proc/self/exe) to start a worker");
  return std::string(buf, static_cast<std::size_t>(n));
}

}  // namespace

std::unique_ptr<Backend> tune_worker_backend(Backend* in_process, int device, const std::string& kernel_spec,
                                             const WorkerArgs& a) {
  const std::string backend = in_process ? in_process->name() : std::string();
  if (a.isolate && a.no_isolate) throw InputError("--isolate and --no-isolate contradict each other");
  if (!a.command.empty() && a.no_isolate) throw InputError("--worker always measures in the worker; drop --no-isolate");
  if (a.cap_margin_ms < 0) throw InputError("--hang-margin-ms must not be negative");
  worker::WorkerOptions opt;
  opt.cap_margin_ms = a.cap_margin_ms;
  if (!a.command.empty()) {
    opt.argv = worker::shell_command(a.command);
  } else if (in_process && (a.isolate || (!a.no_isolate && backend != "cpu")) && device >= 0 &&
             static_cast<std::size_t>(device) < in_process->devices().size()) {
    // (Without the device, the in-process backend says so, as it always has.)
    opt.argv = {self_executable(), "worker", "--backend", backend, "--device", std::to_string(device)};
    if (!kernel_spec.empty()) opt.argv.insert(opt.argv.end(), {"--kernel-spec", kernel_spec});
  } else {
    return nullptr;
  }
  return std::make_unique<worker::WorkerBackend>(std::move(opt));
}

}  // namespace ktune::cli
