#pragma once
// What the registry's reading and writing halves share: private to the core.
#include <string>

#include "ktune/registry.h"

namespace ktune {

inline constexpr int kRegistryFormat = 1;

// The text of reg.to_json().dump(2) and a newline, byte for byte, written directly: the registry
// as JSON values costs several times its entries to build, dump and free.
std::string registry_text(const Registry& reg);

}  // namespace ktune
