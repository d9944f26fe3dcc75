#include "ktune/version.h"

namespace ktune {
const char* version() { return KTUNE_VERSION; }
}  // namespace ktune
