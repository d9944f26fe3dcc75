#pragma once
// File → Export → "Registry as aiter files…": the registry's entries of one family written as
// aiter's tuned-config files (the same core function as `ktune registry export --format aiter`).
#include <QStringList>
#include <filesystem>

#include "ktune/kernel_family.h"

namespace ktune::gui {

// Writes `family`'s entries of the registry file into `dir`; returns the files written. Throws
// InputError saying what to do when there is no registry file or it holds nothing to export.
QStringList exportRegistryAsAiter(const std::filesystem::path& registryFile, const KernelFamily& family,
                                  const QString& dir);

}  // namespace ktune::gui
