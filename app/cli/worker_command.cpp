#include "worker_command.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <future>
#include <set>

#include "ktune/error.h"
#include "ktune/run_options.h"
#include "ktune/worker_client.h"
#include "ktune/worker_protocol.h"
#include "ktune/worker_server.h"
#include "tune_options.h"

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
  tune->add_option(
      "--devices", a.devices,
      "Measure on several devices at once, \"0,1\" or \"all\": one worker process per device (`ktune worker "
      "--device I`, or the --worker command with \"{device}\" replaced by I or \" --device I\" appended); a "
      "problem's configs are spread over identical devices, and devices of different models tune separate "
      "runs, <run-name>-<device slug>, each for its own registry file. One device: as --device");
  tune->add_option("--hang-margin-ms", a.cap_margin_ms,
                   "Worker runs: a config unanswered after --max-ms-per-config plus this margin is killed as a timeout")
      ->capture_default_str();
}

CLI::App* add_worker_subcommand(CLI::App& app, ServeArgs& s) {
  auto* w = app.add_subcommand("worker",
                               "Serve a built-in backend over the worker protocol on stdin/stdout "
                               "(what `tune --isolate` starts; see docs/worker-protocol.md)");
  w->add_option("--backend,-b", s.backend, "Backend to serve: cpu, cuda, hip")->capture_default_str();
  w->add_option("--device", s.device, "Device index within the backend")->capture_default_str();
  w->add_option("--kernel-spec", s.kernel_spec, "Also offer the family of this kernel spec (GPU backends)");
  add_allow_source_outside_spec(w);
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
  check_number("--hang-margin-ms", a.cap_margin_ms, kHangMarginMsRange, false);
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

namespace ktune::cli {

namespace {

// "0,1,3" -> {0, 1, 3}; "all" -> {}.
std::vector<int> parse_device_list(const std::string& text) {
  if (text == "all") return {};
  std::vector<int> out;
  std::size_t from = 0;
  while (from <= text.size()) {
    const std::size_t comma = std::min(text.find(',', from), text.size());
    int v = -1;
    const auto r = std::from_chars(text.data() + from, text.data() + comma, v);
    if (from == comma || r.ec != std::errc{} || r.ptr != text.data() + comma || v < 0)
      throw InputError("--devices '" + text + "': give device indices separated by commas, e.g. 0,1, or all");
    if (std::find(out.begin(), out.end(), v) != out.end())
      throw InputError("--devices '" + text + "' names device " + std::to_string(v) + " twice");
    out.push_back(v);
    from = comma + 1;
  }
  return out;
}

std::string device_command(const std::string& command, int device) {
  const std::string index = std::to_string(device);
  std::string out = command;
  const auto at = out.find("{device}");
  if (at == std::string::npos) return out + " --device " + index;
  for (auto p = at; p != std::string::npos; p = out.find("{device}", p + index.size())) out.replace(p, 8, index);
  return out;
}

}  // namespace

DeviceWorkers start_device_workers(Backend* built_in, const std::string& kernel_spec, WorkerArgs& a,
                                   bool device_given) {
  if (device_given) throw InputError("--device and --devices contradict each other: give --devices only");
  check_number("--hang-margin-ms", a.cap_margin_ms, kHangMarginMsRange, false);
  std::vector<int> list = parse_device_list(a.devices);
  auto start = [&](int device) -> std::unique_ptr<Backend> {
    worker::WorkerOptions opt;
    opt.cap_margin_ms = a.cap_margin_ms;
    if (built_in) {
      opt.argv = {self_executable(), "worker", "--backend", built_in->name(), "--device", std::to_string(device)};
      if (!kernel_spec.empty()) opt.argv.insert(opt.argv.end(), {"--kernel-spec", kernel_spec});
    } else {
      opt.argv = worker::shell_command(device_command(a.command, device));
    }
    return std::make_unique<worker::WorkerBackend>(std::move(opt));
  };
  DeviceWorkers out;
  std::size_t available = built_in ? built_in->devices().size() : 0;
  if (!built_in && list.empty()) {  // "all" of a worker command: the first worker says how many
    out.workers.push_back(start(0));
    available = static_cast<worker::WorkerBackend&>(*out.workers.front()).hello().device_count;
  }
  if (list.empty())
    for (std::size_t i = 0; i < available; ++i) list.push_back(static_cast<int>(i));
  const std::string where = built_in ? "the " + built_in->name() + " backend" : "the worker";
  if (list.empty())
    throw InputError("--devices all: " + where +
                     " has no device on this machine; `ktune devices` shows what is available");
  for (int d : list)
    if (built_in && static_cast<std::size_t>(d) >= available)
      throw InputError("--devices: device " + std::to_string(d) + " does not exist, " + where + " has " +
                       std::to_string(available) + " device(s)");
  if (list.size() == 1) {
    out.single = list.front();
    if (!built_in) a.command = device_command(a.command, out.single);
    out.workers.clear();
    return out;
  }
  if (a.no_isolate)
    throw InputError("--devices over several devices measures in a worker process per device; drop --no-isolate");
  // Started side by side: a Python worker importing a GPU stack takes seconds to say hello.
  std::vector<std::future<std::unique_ptr<Backend>>> starting;
  for (std::size_t k = out.workers.size(); k < list.size(); ++k)
    starting.push_back(std::async(std::launch::async, start, list[k]));
  for (auto& f : starting) out.workers.push_back(f.get());
  for (std::size_t k = 0; k < list.size(); ++k) {
    const DeviceInfo device = out.workers[k]->devices().front();
    if (device.index != list[k])
      throw InputError("the worker started for device " + std::to_string(list[k]) + " says it measures on device " +
                       std::to_string(device.index) +
                       ": it ignores --device (docs/worker-protocol.md, \"Several devices\")");
    auto group = std::find_if(out.groups.begin(), out.groups.end(),
                              [&](const DeviceGroup& g) { return g.slug == device.slug(); });
    if (group == out.groups.end()) group = out.groups.insert(out.groups.end(), DeviceGroup{device.slug(), {}});
    group->lanes.push_back({out.workers[k].get(), device});
  }
  return out;
}

}  // namespace ktune::cli
