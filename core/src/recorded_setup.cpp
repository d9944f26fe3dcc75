#include "ktune/recorded_setup.h"

#include <algorithm>

#include "ktune/error.h"
#include "ktune/family_description.h"
#include "ktune/json_read.h"
#include "ktune/replay_backend.h"

namespace ktune {

using nlohmann::json;

namespace {

using Arguments = std::vector<std::string>;

bool workbench_session(const Arguments& a) { return a.size() == 3 && a[0] == "ktune-workbench" && a[1] == "--session"; }

// The session a workbench run started from; null when the record is not one (or is unreadable).
json session_of(const Arguments& a) {
  if (!workbench_session(a)) return nullptr;
  try {
    json s = parse_json(a[2], "the run's session");
    return s.is_object() ? s : json(nullptr);
  } catch (const InputError&) {
    return nullptr;  // a hand-edited record: nothing can be told from it
  }
}

// The value of `option` on a command line (`--option VALUE` or `--option=VALUE`); nullopt if absent.
std::optional<std::string> option_value(const Arguments& a, const std::string& option) {
  const std::string prefix = option + "=";
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] == option && i + 1 < a.size()) return a[i + 1];
    if (a[i].rfind(prefix, 0) == 0) return a[i].substr(prefix.size());
  }
  return std::nullopt;
}

bool has_flag(const Arguments& a, const std::string& flag) { return std::find(a.begin(), a.end(), flag) != a.end(); }

std::string worker_of(const Arguments& a) {
  if (workbench_session(a)) {
    const json s = session_of(a);
    return s.is_object() && s.contains("worker") && s["worker"].is_string() ? s["worker"].get<std::string>() : "";
  }
  return option_value(a, "--worker").value_or("");
}

Arguments arguments_of(const json& shard) {
  Arguments out;
  if (shard.is_object() && shard.contains("arguments") && shard["arguments"].is_array())
    for (const json& v : shard["arguments"])
      if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

RunOrigin origin_of(const RunMetadata& run) {
  const Arguments& a = run.arguments;
  const std::string verb = a.size() > 1 ? a[1] : "";
  if (verb == "import") return RunOrigin::Import;
  if (run.backend == "replay" || verb == "replay" || has_flag(a, "--replay") || option_value(a, "--replay"))
    return RunOrigin::Replay;
  if (!run.merged_from.empty() || verb == "merge") return RunOrigin::Merge;
  if (workbench_session(a)) return RunOrigin::Workbench;
  return RunOrigin::Tune;
}

// The family as the run recorded it, else this build's, else what the run's problems tell.
void resolve_family(const RunMetadata& run, const std::vector<std::unique_ptr<Backend>>& backends, RecordedSetup& out) {
  if (!run.family_description.is_null()) {
    try {
      out.family = family_from_description(run.family_description, run.backend, "family_description");
      return;
    } catch (const InputError& e) {
      out.unknown.push_back(std::string("the family's description, which does not read (") + e.what() +
                            "): its key fields are read from the run's shapes");
    }
  }
  // A replay's backend is "replay"; the device keeps the backend that measured the trials.
  for (const std::string& backend : {run.backend, run.device.backend})
    if (auto f = built_in_family(backends, backend, run.family)) {
      out.family = std::move(*f);
      out.family_built_in = true;
      return;
    }
  out.family = family_from_run(run);
  out.family.backend = run.backend;
  out.family.source = "run";
  out.family.description.clear();
  if (run.family_description.is_null())
    out.unknown.push_back(
        out.origin == RunOrigin::Import
            ? "the kernel's description: the cache was imported before ktune recorded one; its key fields are read "
              "from the run's shape"
            : "the family's description (FLOP count, defaults of its key fields): the run predates its record, and "
              "this build has no family '" +
                  run.family + "' on " + run.backend + "; its key fields are read from the run's shapes");
}

class RecordedBackend : public Backend {
 public:
  RecordedBackend(DeviceInfo device, KernelFamily family, std::string name, std::string why)
      : device_(std::move(device)), family_(std::move(family)), name_(std::move(name)), why_(std::move(why)) {}
  std::string name() const override { return name_; }
  std::vector<DeviceInfo> devices() override { return {device_}; }
  std::vector<KernelFamily> families() const override { return {family_}; }
  std::unique_ptr<ProblemSession> open(const DeviceInfo&, const KernelFamily&, const Problem&, std::uint64_t) override {
    throw InputError(why_);
  }

 private:
  DeviceInfo device_;
  KernelFamily family_;
  std::string name_, why_;
};

}  // namespace

std::string to_string(RunOrigin origin) {
  switch (origin) {
    case RunOrigin::Tune:
      return "tune";
    case RunOrigin::Workbench:
      return "workbench";
    case RunOrigin::Import:
      return "import";
    case RunOrigin::Replay:
      return "replay";
    case RunOrigin::Merge:
      return "merge";
  }
  return "tune";
}

std::string recorded_worker(const RunMetadata& run) {
  if (const std::string w = worker_of(run.arguments); !w.empty()) return w;
  for (const json& shard : run.merged_from)
    if (const std::string w = worker_of(arguments_of(shard)); !w.empty()) return w;
  return {};
}

RecordedSetup recorded_setup(const RunMetadata& run, const std::vector<std::unique_ptr<Backend>>& backends) {
  RecordedSetup out;
  out.origin = origin_of(run);
  out.worker = recorded_worker(run);
  // A merge's own command line names its shards; how they were made is in their records.
  const Arguments a = out.origin == RunOrigin::Merge && !run.merged_from.empty() ? arguments_of(run.merged_from.front())
                                                                                 : run.arguments;
  if (const json s = session_of(a); s.is_object()) {
    if (s.contains("isolate") && s["isolate"].is_boolean()) out.isolate = s["isolate"].get<bool>();
  } else if (workbench_session(a)) {
    out.unknown.push_back("the workbench session the run started from, which does not read: its worker and Isolate");
  } else if (has_flag(a, "--isolate") || has_flag(a, "--no-isolate")) {
    out.isolate = has_flag(a, "--isolate");
  }
  out.kernel_spec = option_value(a, "--kernel-spec").value_or("");
  if (out.origin == RunOrigin::Import && run.arguments.size() > 3) out.source = run.arguments[3];
  if (out.origin == RunOrigin::Replay)
    out.source = run.arguments.size() > 2 && run.arguments[1] == "replay"
                     ? run.arguments[2]
                     : option_value(run.arguments, "--replay").value_or("");
  out.shards = run.merged_from.size();
  resolve_family(run, backends, out);
  return out;
}

std::unique_ptr<Backend> recorded_backend(const RunMetadata& run, const RecordedSetup& setup, std::string why) {
  return std::make_unique<RecordedBackend>(run.device, setup.family, run.backend, std::move(why));
}

}  // namespace ktune
