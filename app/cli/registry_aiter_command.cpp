#include "registry_aiter_command.h"

#include <iostream>

#include "ktune/registry_format_aiter.h"

namespace ktune::cli {

void add_aiter_options(CLI::App* sub, RegistryArgs& a, bool exporting) {
  sub->add_option("--arch", a.arch,
                  exporting ? "aiter: the GPU architecture that names the files, as triton reports it (gfx942, "
                              "gfx950); default: the registry device's (amd-instinct-mi300x: gfx942), an error "
                              "asks for it when ktune does not know the device"
                            : "aiter: read the files of this architecture (gfx942); default: the registry device's, "
                              "else the only one in the folder");
  if (exporting)
    sub->add_option("--aiter-layout", a.aiter_layout,
                    "aiter: flat (configs/gemm/{arch}-GEMM-{TAG}[-N=..-K=..].json, aiter's releases) or nested "
                    "({arch}/triton/gemm/gemm_{tag}/DEFAULT.json and GEMM-{TAG}-N=..-K=...json, aiter's tip)")
        ->check(CLI::IsMember({"flat", "nested"}))
        ->capture_default_str();
}

int export_aiter_files(const Registry& reg, const KernelFamily& family, const RegistryArgs& a,
                       const std::filesystem::path& registry_file) {
  const AiterExportOptions options{
      a.format == "aiter-guide" ? AiterLayout::Guide : aiter_layout_from_string(a.aiter_layout), a.arch};
  std::vector<std::string> notes;
  const auto written = export_aiter(reg, family, a.output, options, &notes);
  for (const auto& p : written) std::cout << "wrote " << p.string() << '\n';
  for (const auto& n : notes) std::cerr << "note: " << n << " (aiter reads one config per bucket)\n";
  std::cout << written.size() << " aiter files from " << registry_file.string() << " (" << family.name << ")\n";
  return 0;
}

std::vector<std::pair<std::string, RegistryEntry>> read_aiter_files(const RegistryArgs& a, const KernelFamily& family,
                                                                    const std::string& device_slug) {
  const AiterImport in = read_aiter(a.file, family, a.arch.empty() ? aiter_arch(device_slug) : a.arch);
  for (const auto& n : in.notes) std::cout << "skipped " << n << '\n';
  std::cout << "read " << in.entries.size() << " " << in.arch << " configs of " << in.files_read.size()
            << " aiter files in " << a.file << " (" << in.other_files
            << " other .json files not read): all imported unmeasured, aiter's files hold no latencies\n";
  return in.entries;
}

}  // namespace ktune::cli
