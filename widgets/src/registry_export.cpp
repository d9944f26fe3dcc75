#include "ktune/widgets/registry_export.h"

#include "ktune/error.h"
#include "ktune/registry.h"
#include "ktune/registry_formats.h"
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
  for (const auto& path : export_aiter(registry, family, sstr(dir))) files << qstr(path.string());
  return files;
}

}  // namespace ktune::gui
