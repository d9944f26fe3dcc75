#include "launch.h"

#include "ktune/measurement.h"

namespace ktune::cpu {

std::map<std::string, long> read_params(const Config& config, std::initializer_list<const char*> names,
                                        const std::string& family) {
  std::string expected;
  for (const char* n : names) expected += (expected.empty() ? "" : ", ") + std::string(n);
  std::map<std::string, long> values;
  for (const auto& [name, value] : config.values()) {
    bool known = false;
    for (const char* n : names) known = known || name == n;
    if (!known)
      throw TrialFailure(TrialStatus::CompileError,
                         "unknown parameter '" + name + "' for " + family + " on cpu (parameters: " + expected + ")");
    values[name] = static_cast<long>(value.as_int("parameter '" + name + "'"));
  }
  for (const char* n : names)
    if (!values.count(n))
      throw TrialFailure(TrialStatus::CompileError, "config lacks parameter '" + std::string(n) + "' for " + family +
                                                        " on cpu (parameters: " + expected + ")");
  return values;
}

}  // namespace ktune::cpu
