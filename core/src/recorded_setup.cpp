#include "ktune/recorded_setup.h"

#include <algorithm>
#include <filesystem>

#include "ktune/error.h"
#include "ktune/family_description.h"
#include "ktune/json_read.h"
#include "ktune/replay_backend.h"

namespace ktune {

namespace fs = std::filesystem;
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

// How a run, or one of a merge's shards, was made: its command line and the folder it ran in.
struct Record {
  Arguments arguments;
  std::string folder;  // absolute; empty when not recorded
};

Record record_of(const RunMetadata& run) { return {run.arguments, run.working_directory}; }

// A shard's record as merged_from keeps it: written by another ktune, so what does not read says nothing.
Record record_of(const json& shard) {
  Record out;
  if (!shard.is_object()) return out;
  if (shard.contains("arguments") && shard["arguments"].is_array())
    for (const json& v : shard["arguments"])
      if (v.is_string()) out.arguments.push_back(v.get<std::string>());
  if (const auto dir = shard.find("working_directory"); dir != shard.end() && dir->is_string())
    if (const std::string d = dir->get<std::string>(); fs::path(d).is_absolute()) out.folder = d;
  return out;
}

// `path` under `folder` when relative and the folder is known; as given otherwise.
std::string under(const std::string& folder, const std::string& path) {
  if (path.empty() || folder.empty() || fs::path(path).is_absolute()) return path;
  return (fs::path(folder) / path).lexically_normal().string();
}

struct Worker {
  std::string command, folder;
};

// A workbench session names its worker's folder when that was not the workbench's own (a worker
// reconnected in a recorded run's folder); otherwise the worker ran where the record's command did.
Worker worker_of(const Record& r) {
  if (!workbench_session(r.arguments)) return {option_value(r.arguments, "--worker").value_or(""), r.folder};
  const json s = session_of(r.arguments);
  if (!s.is_object() || !s.contains("worker") || !s["worker"].is_string()) return {};
  const auto named = s.find("worker_directory");
  if (named == s.end() || !named->is_string() || named->get<std::string>().empty())
    return {s["worker"].get<std::string>(), r.folder};
  const std::string folder = under(r.folder, named->get<std::string>());
  return {s["worker"].get<std::string>(), fs::path(folder).is_absolute() ? folder : ""};
}

Worker find_worker(const RunMetadata& run) {
  if (Worker w = worker_of(record_of(run)); !w.command.empty()) return w;
  for (const json& shard : run.merged_from)
    if (Worker w = worker_of(record_of(shard)); !w.command.empty()) return w;
  return {};
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

std::string recorded_worker(const RunMetadata& run) { return find_worker(run).command; }

std::string recorded_worker_folder(const RunMetadata& run) { return find_worker(run).folder; }

std::string RecordedSetup::resolve(const std::string& path) const { return under(folder, path); }

RecordedSetup recorded_setup(const RunMetadata& run, const std::vector<std::unique_ptr<Backend>>& backends) {
  RecordedSetup out;
  out.origin = origin_of(run);
  const Worker worker = find_worker(run);
  out.worker = worker.command;
  out.worker_folder = worker.folder;
  // A merge's own command line names its shards; how they were made is in their records.
  const Record made =
      out.origin == RunOrigin::Merge && !run.merged_from.empty() ? record_of(run.merged_from.front()) : record_of(run);
  const Arguments& a = made.arguments;
  out.folder = made.folder;
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
  const auto relative = [](const std::string& p) { return !p.empty() && !fs::path(p).is_absolute(); };
  if ((!out.worker.empty() && out.worker_folder.empty()) ||
      (out.folder.empty() && (relative(out.kernel_spec) || relative(out.source))))
    out.unknown.push_back(
        "the folder the run was made in (the run predates its record): relative paths in its command line start "
        "from the folder you run ktune in");
  resolve_family(run, backends, out);
  return out;
}

std::unique_ptr<Backend> recorded_backend(const RunMetadata& run, const RecordedSetup& setup, std::string why) {
  return std::make_unique<RecordedBackend>(run.device, setup.family, run.backend, std::move(why));
}

}  // namespace ktune
