#include "registry_command.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "ktune/backends/cuda_spec.h"
#include "ktune/backends/hip_spec.h"
#include "ktune/diff.h"
#include "ktune/error.h"
#include "ktune/family_description.h"
#include "ktune/json_read.h"
#include "ktune/kernel_spec.h"
#include "ktune/registry_formats.h"
#include "registry_aiter_command.h"
#include "registry_target.h"
#include "tune_options.h"

namespace ktune::cli {

namespace {

void add_target(CLI::App* sub, RegistryArgs& a, bool family_option = true) {
  if (family_option) sub->add_option("--family", a.family, "Kernel family (`ktune kernels`)");
  sub->add_option(
      "--kernel-spec", a.kernel_spec,
      "The family of a kernel spec JSON (e.g. resources/kernels/cuda/gemm.json): no GPU or CUDA build needed");
  add_allow_source_outside_spec(sub);
  sub->add_option("--family-from", a.family_from,
                  "A run folder whose recorded family to use, with its backend and device: a family tuned through a "
                  "worker (`ktune tune --worker`), which this build does not have. Without it such a family is read "
                  "from the description the registry file keeps (written by apply and import)");
  sub->add_option("--backend,-b", a.backend,
                  "Backend whose registry and family to use: a built-in one or a worker's (the name its runs record)")
      ->capture_default_str()
      ->each([&a](const std::string&) { a.backend_given = true; });
  sub->add_option("--device", a.device, "Device index (its slug names the registry file)")->capture_default_str();
  sub->add_option("--device-slug", a.device_slug, "Registry device slug (default: this machine's device)");
  sub->add_option("--registry", a.registry, "Registry root (holds <backend>/<device>.json)")->capture_default_str();
}

std::vector<std::string> split_fields(const std::string& text, const std::string& option) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string f; std::getline(ss, f, ',');) {
    if (f.empty()) throw InputError(option + " '" + text + "' has an empty name; give names separated by commas");
    out.push_back(f);
  }
  return out;
}

std::string target_slug(const RegistryArgs& a, const Backends& backends);

// The family to read entries of: a kernel spec's without its backend (registry commands run no
// kernel, so a CPU-only build reads a CUDA registry), else family_of_target's (a built-in one, a
// worker's from its run or the registry file).
KernelFamily target_family(const RegistryArgs& a, const Backends& backends) {
  if (!a.kernel_spec.empty()) {
    if (a.backend != "cuda" && a.backend != "hip")
      throw InputError("--kernel-spec describes a GPU kernel: give --backend cuda or --backend hip (got '" + a.backend +
                       "')");
    KernelFamily f =
        KernelSpec::load(a.kernel_spec, a.backend == "hip" ? hip_spec_dialect() : cuda_spec_dialect()).family();
    if (!a.family.empty() && a.family != f.name)
      throw InputError("kernel spec " + a.kernel_spec + " defines '" + f.name + "', not '" + a.family + "'");
    f.backend = a.backend;
    return f;
  }
  return family_of_target(a, backends, [&] { return target_slug(a, backends); });
}

// The registry file's device slug: --device-slug, else the device's (which needs the backend).
std::string target_slug(const RegistryArgs& a, const Backends& backends) {
  if (!a.device_slug.empty()) return a.device_slug;
  require_slug_without_backend(a, backends);
  const auto devices = find_backend(backends, a.backend).devices();
  if (a.device < 0 || static_cast<std::size_t>(a.device) >= devices.size())
    throw InputError("the " + a.backend + " backend has no device " + std::to_string(a.device) +
                     " here; name the registry file with --device-slug");
  return devices[static_cast<std::size_t>(a.device)].slug();
}

Registry load_noting(const std::filesystem::path& file) {
  Registry reg = Registry::load(file);
  for (const auto& m : reg.migrations()) std::cerr << "note: " << file.string() << ": migrated " << m << '\n';
  return reg;
}

void add_tpu_options(CLI::App* sub, RegistryArgs& a, bool exporting) {
  sub->add_option("--key-fields", a.key_fields,
                  "tpu-inference's flat layout: the family key fields a key's comma-separated values are, in order "
                  "(default batch,out,in,x_dtype,w_dtype: tpu-inference's n_batch,n_out,n_in,x_q_dtype,w_q_dtype)");
  sub->add_option("--list-params", a.list_params,
                  "tpu-inference's bare-list values: the parameters they hold, in order (default "
                  "batch_block_size,out_block_size,in_block_size,n_lane_multiplier, or for attention "
                  "num_kv_pages_per_block,num_q_per_block)");
  if (exporting) {
    sub->add_option("--values", a.values,
                    "tpu-inference: write {config, stats, metadata} objects (keeps the measurements; unmeasured "
                    "entries get \"stats\": {}) or bare lists, as its newer files hold them")
        ->check(CLI::IsMember({"object", "list"}))
        ->capture_default_str();
  } else {
    sub->add_option("--key", a.fixed_keys,
                    "A key field the file's keys do not give, as field=value, for every entry (repeatable): "
                    "num_sequences=35 for tpu-inference's attention files");
  }
}

TpuOptions tpu_options(const RegistryArgs& a) {
  TpuOptions o;
  if (!a.key_fields.empty()) o.key_fields = split_fields(a.key_fields, "--key-fields");
  if (!a.list_params.empty()) o.list_params = split_fields(a.list_params, "--list-params");
  o.fixed_fields = a.fixed_keys;
  o.lists = a.values == "list";
  return o;
}

TpuImport read_tpu(const RegistryArgs& a, const KernelFamily& family) {
  TpuImport in = read_tpu_inference(a.file, family, tpu_options(a));
  std::cout << "read " << in.entries.size() << " entries of " << a.file << " ("
            << (in.layout == TpuLayout::Nested ? "nested attention layout" : "flat layout") << ", " << in.from_lists
            << " as bare lists): " << in.unmeasured
            << " without a latency, imported unmeasured; the median latency (which tpu-inference does not record) is "
            << "the median of samples_ns for " << in.median_from_samples << " and latency_avg_ns for "
            << in.median_from_average << '\n';
  for (const auto& s : in.skipped) std::cout << "skipped " << s << '\n';
  return in;
}

int export_tpu(const Registry& reg, const KernelFamily& family, const RegistryArgs& a) {
  const TpuFile f = export_tpu_inference(reg, family, a.output, tpu_options(a));
  std::cout << "wrote " << f.path.string() << ": " << f.entries << " " << family.name << " entries";
  if (f.folded > 0)
    std::cout << " (" << f.folded << " more differ only in fields tpu-inference's keys lack: the largest "
              << family.bucket_field << " of each is written)";
  std::cout << '\n';
  return 0;
}

}  // namespace

RegistryCommands add_registry_command(CLI::App& app, RegistryArgs& a) {
  RegistryCommands c;
  c.registry = app.add_subcommand(
      "registry",
      "Write the registry in the seed tools' formats, or read theirs into it. A family tuned through a worker "
      "(`tune --worker`) works too: its description is read from the registry file (apply keeps it there) or from "
      "its run (--family-from RUN_DIR)");
  c.registry->require_subcommand(1);
  c.exp = c.registry->add_subcommand(
      "export",
      "Write a family's entries as aiter's tuned GEMM configs, as aiter's loader (get_gemm_config) reads them: per "
      "group of equal key fields but M (N, K) a {arch}-GEMM-{TAG}-N=..-K=...json holding, for each tuned M, the "
      "bucket M_LEQ_b of the smallest of aiter's bounds b >= M (4, 8, 16, ..., 8192; with --aiter-layout nested 1, "
      "4, ..., 8192), M_GEQ_8192 past them, and any (the largest tuned M); two tuned Ms in one bucket: the larger "
      "one's config, with a note. Plus the default file {arch}-GEMM-{TAG}.json that aiter requires: the most common "
      "config per bucket and overall. {arch} is aiter's architecture name (gfx942), from the registry's device or "
      "--arch; {TAG} is the family in upper case less a leading GEMM_ (gemm_a8w8_blockscale: A8W8_BLOCKSCALE). Text "
      "key fields (dtypes) are in the name only where they differ between files. --format aiter-guide writes the "
      "seed guide's buckets (small, medium_M32, medium_M64, medium_M128, large, xlarge) named by the device slug, "
      "of which aiter's loader reads only any. --format tpu-inference writes "
      "tpu-inference's tuned_data file instead (see --values, --key-fields, --list-params)");
  c.exp->add_option("--format", a.format, "aiter | aiter-guide | tpu-inference")
      ->required()
      ->check(CLI::IsMember({"aiter", "aiter-guide", "tpu-inference"}));
  c.exp->add_option("-o,--output", a.output, "Folder to write the files into (created)")->required();
  add_tpu_options(c.exp, a, true);
  add_aiter_options(c.exp, a, true);
  add_target(c.exp, a);
  c.imp = c.registry->add_subcommand(
      "import",
      "Read a tpu-inference tuned_data file into the ktune registry, either layout: flat "
      "(quantized_matmul/tpu_v6e.json: \"16,2048,4096,int8,int8\" keys, their comma-separated values the --key-fields) "
      "or nested (ragged_paged_attention/v3/*.json: page size -> q_{dtype}_kv_{dtype} -> q_head-N_kv_head-N_head-N -> "
      "max_model_len-N-sw-None, onto page_size, dtype, num_q_heads, num_kv_heads, head_dim, max_model_len; give "
      "num_sequences with --key); values {config, stats, metadata} or bare lists (--list-params). An entry without "
      "a latency (\"stats\": {} or none) is a config without a measurement: imported unmeasured, diff and apply say "
      "so. tpu-inference records no median: the median of samples_ns, else latency_avg_ns. Every config is checked "
      "against the family's space; existing entries are kept unless --force; the write is atomic with a backup, "
      "under the registry's lock. tpu-tune is the same format's older name. --format aiter reads aiter's tuned GEMM "
      "configs of the family (a file, or a folder searched for {arch}-GEMM-{TAG}-N=..-K=...json and the nested "
      "layout's GEMM-{TAG}-N=..-K=...json): M_LEQ_b becomes the entry of M=b and M_GEQ_b that of M=b, all "
      "unmeasured (aiter's files hold no latencies); any and the default file (no N, K) are not imported, and "
      "the command says so");
  c.imp->add_option("--format", a.format, "tpu-inference (tpu-tune) | aiter")
      ->required()
      ->check(CLI::IsMember({"tpu-inference", "tpu-tune", "aiter"}));
  c.imp->add_option("file", a.file, "tpu-inference tuned_data JSON file, or aiter's config file or folder")
      ->required()
      ->check(CLI::ExistingPath);
  add_tpu_options(c.imp, a, false);
  add_aiter_options(c.imp, a, false);
  c.imp->add_flag("--force", a.force, "Replace entries the registry already has for these keys");
  c.imp->add_flag("--dry-run", a.dry_run, "Print what would be written; write nothing");
  add_target(c.imp, a);
  return c;
}

int run_registry_export(const RegistryArgs& args, const Backends& backends) {
  const RegistryArgs a = with_run_target(args);
  const KernelFamily family = target_family(a, backends);
  const auto file = Registry::file_for(a.registry, a.backend, target_slug(a, backends));
  const Registry reg = load_noting(file);
  if (a.format == "tpu-inference") return export_tpu(reg, family, a);
  return export_aiter_files(reg, family, a, file);
}

int run_registry_import(const RegistryArgs& args, const Backends& backends) {
  const RegistryArgs a = with_run_target(args);
  const KernelFamily family = target_family(a, backends);
  const std::string device_slug = target_slug(a, backends);
  const auto entries = a.format == "aiter" ? read_aiter_files(a, family, device_slug) : read_tpu(a, family).entries;
  const auto file = Registry::file_for(a.registry, a.backend, device_slug);
  // Under the lock apply takes: a concurrent apply or import does not lose these entries or its own.
  const FileLock lock = lock_registry(file);
  Registry reg = load_noting(file);
  if (!std::filesystem::exists(file)) reg = Registry(a.backend, device_slug);
  if (reg.backend() != a.backend || reg.device() != device_slug)
    throw InputError(file.string() + " holds the registry of " + reg.backend() + "/" + reg.device() + ", not of " +
                     a.backend + "/" + device_slug);
  std::size_t written = 0, kept = 0;
  for (const auto& [key, e] : entries) {
    if (reg.find(family.name, key) && !a.force) {
      std::cout << "kept " << family.name << " " << key << ": the registry has it (--force replaces it)\n";
      ++kept;
      continue;
    }
    std::cout << (a.dry_run ? "would write " : "wrote ") << family.name << " " << key << " -> " << e.config.key()
              << '\n';
    reg.set(family.name, key, e);
    ++written;
  }
  if (a.dry_run) {
    std::cout << "dry run: nothing written\n";
  } else if (written > 0) {
    // A worker's family travels with its entries, as apply keeps it.
    if (auto d = describe_family(family, family.default_space); !d.is_null())
      reg.set_family_description(family.name, std::move(d));
    reg.save(file);
    std::cout << "registry " << file.string() << ": " << written << " written, " << kept << " kept\n";
  } else {
    std::cout << "registry " << file.string() << " unchanged\n";
  }
  return 0;
}

CLI::App* add_lookup_command(CLI::App& app, LookupArgs& a) {
  auto* lookup = app.add_subcommand(
      "lookup",
      "Look a shape up in the registry as serving code would: the exact key (the local shape, whatever --tp-size tuned "
      "it), else the nearest tuned bucket (M rounded up to the next tuned M, else the largest tuned M below) whose "
      "config can launch there, else the family default (the most common best config of the device's entries that "
      "the family's constraints allow there); "
      "warns naming the missing key and the command that tunes it, and when the entry was measured with other "
      "driver/toolkit/compiler versions than this machine's. A family tuned through a worker (`tune --worker`) is read "
      "from the registry file, where apply keeps it (--backend WORKER_BACKEND --device-slug S), or from its run "
      "(--family-from RUN_DIR)");
  lookup->add_option("family", a.target.family,
                     "Kernel family: a built-in one, or a worker's that the registry file describes (left out with "
                     "--family-from RUN_DIR)");
  lookup->add_option("--shape,-s", a.shapes, "Shape(s)")->required();
  lookup->add_option("--tp-size", a.tp_size, "Tensor-parallel degree: look up the local shape")->capture_default_str();
  lookup->add_option("--tp-split-dim", a.tp_split_dim, "out | in | heads (left out: the family's only split)");
  lookup
      ->add_option("--device-json", a.device_json,
                   "Device properties (`ktune devices --json` of the serving machine) to check the family default "
                   "against, when the registry is not this machine's")
      ->check(CLI::ExistingFile);
  add_target(lookup, a.target, false);
  return lookup;
}

int run_lookup(const LookupArgs& args, const Backends& backends) {
  LookupArgs a = args;
  a.target = with_run_target(args.target);
  const KernelFamily family = target_family(a.target, backends);
  const std::string slug = target_slug(a.target, backends);
  // The device's properties check the family default against its constraints, and the running
  // versions are compared with the entry's: from this machine when the registry is its own.
  LookupContext context;
  for (const auto& b : backends) {
    if (b->name() != a.target.backend) continue;
    const auto devices = b->devices();
    const auto i = static_cast<std::size_t>(a.target.device);
    if (a.target.device >= 0 && i < devices.size() && devices[i].slug() == slug) {
      context.device = devices[i].variables();
      context.versions = b->versions();
    }
  }
  if (context.device.empty()) context.device = run_device_variables(a.target, slug);
  if (!a.device_json.empty()) {
    nlohmann::json j = read_json_file(a.device_json, "device properties");
    if (j.is_array()) {
      const auto it = std::find_if(
          j.begin(), j.end(), [&](const auto& d) { return d.is_object() && DeviceInfo::from_json(d).slug() == slug; });
      if (it == j.end()) throw InputError("device properties " + a.device_json + " list no device of slug " + slug);
      j = *it;
    }
    context.device = DeviceInfo::from_json(j).variables();
  }
  const auto file = Registry::file_for(a.target.registry, a.target.backend, slug);
  const Registry reg = load_noting(file);
  for (const auto& p : expand_shapes(family, a.shapes, a.tp_size, tp_split_dim_from_string(a.tp_split_dim))) {
    const LookupResult r = reg.lookup(family, p, context);
    const char* src = r.source == LookupSource::Exact    ? "exact"
                      : r.source == LookupSource::Bucket ? "nearest bucket"
                                                         : "default";
    std::cout << p.local_key() << ": " << r.config.key() << "  (" << src
              << (r.matched_key.empty() ? "" : " " + r.matched_key)
              << (r.entry && !r.entry->measured() ? ", unmeasured: " + r.entry->imported_from + " gives no latency"
                                                  : "")
              << ")\n";
    if (!r.warning.empty()) std::cerr << "warning: " << r.warning << '\n';
    if (!r.version_warning.empty()) std::cerr << "warning: " << r.version_warning << '\n';
  }
  return 0;
}

}  // namespace ktune::cli
