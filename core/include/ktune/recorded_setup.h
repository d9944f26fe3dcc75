#pragma once
// What a run folder says about how its run was made, for a front end that shows the setup again
// (the workbench's Setup page when a run is opened) or continues the run: which kind of run it
// is (a tune, a workbench run, an import, a replay, a merge), the worker command that measured
// it, whether it was isolated, the kernel spec it loaded, its family, and what the run does not
// record. Older runs still read: what they lack is listed in `unknown`, never guessed silently.
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ktune/backend.h"
#include "ktune/kernel_family.h"
#include "ktune/run_store.h"

namespace ktune {

enum class RunOrigin {
  Tune,       // ktune tune (in process, isolated or through --worker)
  Workbench,  // started from the workbench's Setup page (its session is the run's arguments)
  Import,     // ktune import kernel-tuner, or the workbench's File → Import
  Replay,     // ktune tune --replay, or the workbench's File → Replay
  Merge,      // ktune merge of shards
};
std::string to_string(RunOrigin origin);  // "tune", "workbench", "import", "replay", "merge"

struct RecordedSetup {
  RunOrigin origin = RunOrigin::Tune;
  // The external worker's command line that measured the run; empty when a built-in backend did.
  std::string worker;
  // --isolate / --no-isolate, or the workbench session's Isolate; unset: the backend's default.
  std::optional<bool> isolate;
  // The absolute folder `worker` runs in: the one its command ran in when the run was made (a
  // workbench run's worker folder, a merge's shard's folder). Empty when the run predates the
  // record (listed in `unknown`): a front end then runs it in its own folder, and says so.
  std::string worker_folder;
  std::string kernel_spec;  // the --kernel-spec FILE a run loaded, as given
  // Where the trials came from without a device: the Kernel Tuner cache (import), the recorded
  // run folder (replay).
  std::string source;
  // The absolute folder the relative paths of `kernel_spec` and `source` start from (the folder of
  // the command line they were given on); empty when the run predates the record.
  std::string folder;
  std::size_t shards = 0;  // a merge: how many shards it combines
  // The run's family: the description it recorded, else the built-in one of its backend, else
  // one made from its problems and space (family_from_run: no FLOP count).
  KernelFamily family;
  bool family_built_in = false;
  // What the run does not record, each as a sentence a person reads ("the family's description
  // (FLOP count, defaults of its key fields): ...").
  std::vector<std::string> unknown;

  // `path` (kernel_spec, source) as it names a file from anywhere: under `folder` when relative;
  // as given when absolute, empty, or the folder is not recorded.
  std::string resolve(const std::string& path) const;
};

// The worker command that measured `run`, "" when a built-in backend did: the "worker" of the
// session a workbench run started from, the --worker (or --worker=) of a `ktune tune` command line,
// or, for a merge, that of its first shard that had one.
std::string recorded_worker(const RunMetadata& run);
// The absolute folder that command ran in (RecordedSetup::worker_folder); empty when not recorded.
std::string recorded_worker_folder(const RunMetadata& run);

// Reads `run` as above; `backends` are this build's (for built-in families). Never throws for a
// run that RunMetadata::from_json accepted: a malformed part is listed in `unknown`.
RecordedSetup recorded_setup(const RunMetadata& run, const std::vector<std::unique_ptr<Backend>>& backends);

// A backend that shows a recorded run without measuring anything: its name is the run's backend,
// its one device the recorded one, its one family the recorded one. open() throws InputError(why),
// so a front end may list it like any backend and still never start a run on it.
std::unique_ptr<Backend> recorded_backend(const RunMetadata& run, const RecordedSetup& setup, std::string why);

}  // namespace ktune
