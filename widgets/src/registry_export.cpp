#include "ktune/widgets/registry_export.h"

#include "ktune/error.h"
#include "ktune/registry.h"
#include "ktune/registry_format_aiter.h"
#include "ktune/widgets/qt_types.h"

namespace ktune::gui {

QStringList exportRegistryAsAiter(const std::filesystem::path& registryFile, const KernelFamily& family,
                                  const QString& dir) {
  // Registry::load reads a missing file as an empty registry; here that is a wrong folder or
  // device, which the user should hear about by name rather than as "no entries".
  if (!std::filesystem::exists(registryFile))
    throw InputError("no registry file " + registryFile.string() +
                     ": choose the registry folder on the Diff page, or the backend and device on the Setup page, "
                     "that hold tuned " +
                     family.name + " entries");
  const Registry registry = Registry::load(registryFile);
  QStringList files;
  // The workbench asks no architecture: a device whose gfx target ktune cannot tell (a CPU, an
  // NVIDIA GPU) names the files by its slug, as `registry export --format aiter --arch SLUG` would.
  AiterExportOptions options;
  if (aiter_arch(registry.device()).empty()) options.arch = registry.device();
  for (const auto& path : export_aiter(registry, family, sstr(dir), options)) files << qstr(path.string());
  return files;
}

}  // namespace ktune::gui
