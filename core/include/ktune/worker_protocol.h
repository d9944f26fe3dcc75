#pragma once
// The worker protocol (docs/worker-protocol.md): line-delimited JSON between ktune and a worker
// process on the worker's stdin/stdout. ktune decides what to measure; the worker compiles,
// validates and times. These are the message spellings both sides share; the process handling
// is in worker_process.h, the ktune side in worker_client.h, the built-in server in worker_server.h.
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/backend.h"

namespace ktune::worker {

inline constexpr int kProtocolVersion = 1;

// The other side broke the protocol: a message that is not a JSON object, an unknown type, a
// reply to no request, a version this side does not speak. The message says which.
class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parameter values travel as they are: integers, booleans, strings (param_value.h).
struct OfferedFamily {
  KernelFamily family;
  bool has_space = true;  // false: the worker uses the space ktune is given (--space)
};

struct Hello {
  int protocol = kProtocolVersion;
  std::string worker;   // "ktune 0.4.0 worker", "numpy_matmul.py"
  std::string backend;  // registry folder: "cpu", "cuda", or the worker's own name
  std::vector<DeviceInfo> devices;
  // Devices of this kind the worker's machine has, for `tune --devices all` (which starts one
  // worker per device, each with --device I); optional on the wire, devices.size() when absent.
  std::size_t device_count = 0;
  std::vector<OfferedFamily> families;
  std::vector<std::pair<std::string, std::string>> versions;
};

// Parses one line. Throws ProtocolError naming what is wrong (not JSON, not an object, no "type").
nlohmann::json parse_line(const std::string& line);
// One line of output, newline included.
std::string to_line(const nlohmann::json& message);

// ktune's opening message and the worker's check of it.
nlohmann::json client_hello();
void check_client_hello(const nlohmann::json& m);  // throws ProtocolError on another version

nlohmann::json to_json(const Hello& h);
Hello hello_from_json(const nlohmann::json& m);  // throws ProtocolError naming the field

nlohmann::json family_to_json(const KernelFamily& f);
// `where` names the list `j` came from in errors ("hello.families.gemm.space: ..."); empty: `j`
// stands alone (a family description, family_description.h), and errors give the path inside it
// ("space: ...") for the caller to put after the file it read it from.
OfferedFamily family_from_json(const nlohmann::json& j, const std::string& backend,
                               const std::string& where = "hello.families");

// Config::from_json, its errors as ProtocolError.
Config config_from_wire(const nlohmann::json& j);

struct Request {
  std::string type;  // "prepare" | "measure" | "sample" | "shutdown"
  std::int64_t id = 0;
  std::string family;
  Problem problem;
  Config config;
  std::uint64_t seed = 0;
  Tolerance tolerance;
  MeasureSettings settings;
  std::optional<double> best_median_ns;
  bool validate_only = false;
  // The backend's reference implementation (cuBLAS, OpenBLAS) instead of `config`: prepare and
  // sample only, for the speedup measured in alternation with the best config.
  bool baseline = false;
  // sample: one timed sample of `launches` launches with settings.method / rotate_buffers,
  // given up after timeout_ms.
  int launches = 1;
  double timeout_ms = 0;
};
nlohmann::json to_json(const Request& r);
Request request_from_json(const nlohmann::json& m);  // throws ProtocolError

// A worker's answer to prepare or measure. status Ok with samples for a measurement; a failing
// status (compile_error, wrong_result, crashed, ...) with its message otherwise.
struct Reply {
  std::int64_t id = 0;
  TrialStatus status = TrialStatus::Ok;
  std::string message;
  double compile_time_s = 0;
  Validation validation;
  bool validated = false;
  std::vector<double> samples_ns;
  std::map<std::string, double> metrics;  // measured: the worker's own numbers, Trial::metrics
  std::string baseline_name;              // prepared, for a baseline: "cuBLAS"
  double ns = 0;                          // sampled: ns per launch ...
  Conditions conditions;                  // ... and the device's conditions meanwhile, where read
};
nlohmann::json prepared_reply(std::int64_t id, double compile_time_s, const std::string& baseline_name = {});
nlohmann::json sampled_reply(std::int64_t id, double ns, const Conditions& conditions = {});
nlohmann::json measured_reply(std::int64_t id, const Measured& m, double compile_time_s);
nlohmann::json failed_reply(std::int64_t id, TrialStatus status, const std::string& message);
nlohmann::json error_reply(std::optional<std::int64_t> id, const std::string& message);
nlohmann::json bye_reply(std::int64_t id);
// Reads prepared / measured / failed. An "error" reply is a ProtocolError with its message.
Reply reply_from_json(const nlohmann::json& m);

}  // namespace ktune::worker
