#pragma once
// `ktune devices` and `ktune kernels`: what this machine's backends offer.
#include <memory>
#include <string>
#include <vector>

#include "ktune/backend.h"

namespace ktune::cli {

int cmd_devices(const std::vector<std::unique_ptr<Backend>>& backends, bool json);
// `only`: one backend's families; empty for all.
int cmd_kernels(const std::vector<std::unique_ptr<Backend>>& backends, const std::string& only);

}  // namespace ktune::cli
