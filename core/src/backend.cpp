#include "ktune/backend.h"

#include "ktune/error.h"

namespace ktune {

Measured ProblemSession::validate_and_measure(PreparedKernel& kernel, const Tolerance& tol,
                                              const MeasureSettings& settings, std::optional<double> best_median_ns) {
  Measured m;
  m.validation = validate(kernel, tol);
  m.outcome = measure(
      settings, [&](const SampleRequest& r) { return sample(kernel, r); }, best_median_ns);
  m.metrics = take_conditions(kernel);
  return m;
}

KernelFamily Backend::load_family_spec(const std::filesystem::path& spec) {
  throw InputError("the " + name() + " backend does not load kernel specs (" + spec.string() +
                   "); use a GPU backend such as --backend cuda");
}

KernelFamily Backend::family(const std::string& fname) const {
  std::string known;
  for (auto& f : families()) {
    if (f.name == fname) return f;
    known += (known.empty() ? "" : ", ") + f.name;
  }
  throw InputError("unknown kernel '" + fname + "' on the " + name() + " backend (known: " + known +
                   "; `ktune kernels` lists them)");
}

Backend& find_backend(const std::vector<std::unique_ptr<Backend>>& backends, const std::string& name) {
  std::string known;
  for (const auto& b : backends) {
    if (b->name() == name) return *b;
    known += (known.empty() ? "" : ", ") + b->name();
  }
  throw InputError("unknown backend '" + name + "' (this build has: " + known + ")");
}

DeviceInfo find_device(Backend& backend, int index) {
  const auto devices = backend.devices();
  if (devices.empty())
    throw InputError("the " + backend.name() + " backend has no device on this machine" +
                     (backend.unavailable_reason().empty() ? "" : " (" + backend.unavailable_reason() + ")") +
                     "; `ktune devices` shows what is available");
  if (index < 0 || static_cast<std::size_t>(index) >= devices.size())
    throw InputError("--device " + std::to_string(index) + " does not exist: the " + backend.name() + " backend has " +
                     std::to_string(devices.size()) + " device(s)");
  return devices[static_cast<std::size_t>(index)];
}

}  // namespace ktune
