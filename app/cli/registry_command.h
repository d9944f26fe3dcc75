#pragma once
// `ktune registry export --format aiter` and `ktune registry import --format tpu-tune`: the
// registry in the files the seed tools' users already load and keep.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "ktune/backend.h"
#include "ktune/kernel_family.h"

namespace ktune::cli {

struct RegistryArgs {
  std::string format;
  std::string family;
  std::string kernel_spec;
  std::string family_from;  // a run folder: its recorded family, backend and device (a worker's)
  std::string backend = "cpu";
  bool backend_given = false;  // --backend on the command line (else --family-from's run's)
  int device = 0;
  std::string device_slug;  // default: the device's
  std::string registry = "tuned_data";
  std::string output;                   // export: the folder
  std::string file;                     // import: the tpu-tune file
  std::string key_fields;               // tpu-inference's flat keys: "batch,out,in,x_dtype,w_dtype"
  std::string list_params;              // tpu-inference's bare lists: the parameters, in order
  std::vector<std::string> fixed_keys;  // import: "num_sequences=35", fields the file's keys lack
  std::string values = "object";        // export --format tpu-inference: object | list
  std::string arch;                     // aiter: the GPU architecture of the files (gfx942)
  std::string aiter_layout = "flat";    // export --format aiter: flat | nested
  bool force = false, dry_run = false;
};

// Adds `registry` with `export` and `import`; returns them (`registry`, export, import).
struct RegistryCommands {
  CLI::App* registry = nullptr;
  CLI::App* exp = nullptr;
  CLI::App* imp = nullptr;
};
RegistryCommands add_registry_command(CLI::App& app, RegistryArgs& args);
using Backends = std::vector<std::unique_ptr<Backend>>;
// Exit 0; InputError (exit 2) naming the file, key and field of a bad input.
int run_registry_export(const RegistryArgs& args, const Backends& backends);
int run_registry_import(const RegistryArgs& args, const Backends& backends);

// `ktune lookup`: a shape looked up as serving code would (Registry::lookup).
struct LookupArgs {
  RegistryArgs target;  // family, kernel spec, backend, device, device slug, registry
  std::vector<std::string> shapes;
  std::string device_json;  // device properties from `ktune devices --json` (another machine's)
  int tp_size = 1;
  std::string tp_split_dim = "none";
};
CLI::App* add_lookup_command(CLI::App& app, LookupArgs& args);
int run_lookup(const LookupArgs& args, const Backends& backends);

}  // namespace ktune::cli
