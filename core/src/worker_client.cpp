#include "ktune/worker_client.h"

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>

#include "ktune/error.h"
#include "ktune/worker_process.h"

namespace ktune::worker {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// The worker died or broke the protocol while a request was waiting: what is known of why.
struct WorkerLost {
  std::string why;
};
struct WorkerSilent {};

std::chrono::milliseconds ms(double v) { return std::chrono::milliseconds(static_cast<std::int64_t>(v)); }

constexpr std::string_view kShellExec = "exec ";

// A line of the worker's for a message: long ones are cut.
std::string excerpt(const std::string& line) { return line.size() > 200 ? line.substr(0, 200) + "..." : line; }

// A line that starts like a message and names a type was meant as one (print() in a kernel
// writes other text); when it does not parse, an answer was lost, not noise printed.
bool meant_as_message(const std::string& line) {
  const auto first = line.find_first_not_of(" \t");
  return first != std::string::npos && line[first] == '{' && line.find("\"type\"") != std::string::npos;
}

// "the worker `python3 w.py`", for messages that name it.
std::string worker_named(const std::string& command) { return "the worker `" + command + "`"; }

std::string number_text(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

}  // namespace

std::vector<std::string> shell_command(const std::string& command) {
  return {"/bin/sh", "-c", std::string(kShellExec) + command};
}

std::string WorkerOptions::command() const {
  if (argv.size() == 3 && argv[0] == "/bin/sh" && argv[1] == "-c" && argv[2].starts_with(kShellExec))
    return argv[2].substr(kShellExec.size());
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

// One running worker: its process, and the replies its reader thread hands to waiting requests.
class Connection {
 public:
  explicit Connection(const WorkerOptions& options) : command_(options.command()) {
    process_ = std::make_unique<WorkerProcess>(
        options.argv, [this](const std::string& line) { on_line(line); },
        [this](const std::string& how) { on_exit(how); }, options.working_directory);
    process_->send(to_line(client_hello()));
    std::unique_lock lock(mutex_);
    if (!cv_.wait_for(lock, ms(options.hello_timeout_s * 1000), [this] { return hello_ || dead_; })) {
      lock.unlock();
      process_->kill();
      throw RunError(who() + " sent no hello within " + number_text(options.hello_timeout_s) +
                     " s (the time a worker has to answer ktune's hello)" + details());
    }
    if (!hello_) {
      lock.unlock();
      process_->kill();
      throw RunError(who() + " " + death_ + " before its hello" + details());
    }
  }
  ~Connection() {
    // A polite end: shutdown, then EOF; the process handle kills whatever is left.
    if (alive())
      process_->send(to_line({{"type", "shutdown"}, {"id", next_id_++}}));
    else
      process_->kill();  // dead, or alive but no longer trusted
    process_.reset();
  }

  const json& hello() const { return *hello_; }
  int pid() const { return process_->pid(); }
  bool alive() {
    std::lock_guard lock(mutex_);
    return !dead_ && !killed_;
  }
  void kill() {
    {
      std::lock_guard lock(mutex_);
      killed_ = true;
    }
    process_->kill();
  }

  // Sends `m` with a fresh id and waits for its reply. Throws WorkerLost when the worker dies or
  // breaks the protocol first, WorkerSilent when `timeout` passes.
  json call(json m, std::chrono::milliseconds timeout) {
    const std::int64_t id = next_id_++;
    m["id"] = id;
    std::unique_lock lock(mutex_);
    if (dead_ || killed_)
      throw WorkerLost{who() + " " + (death_.empty() ? std::string("was killed") : death_) + details()};
    pending_[id];
    lock.unlock();
    process_->send(to_line(m));  // a failed write shows up as the worker's death
    lock.lock();
    const bool answered = cv_.wait_for(lock, timeout, [&] { return pending_[id].has_value() || dead_; });
    auto reply = std::move(pending_[id]);
    pending_.erase(id);
    if (reply) return std::move(*reply);
    if (!answered) {
      abandoned_.insert(id);  // its late answer is dropped, not a protocol error
      throw WorkerSilent{};
    }
    lock.unlock();
    throw WorkerLost{who() + " " + death_ + details()};
  }

  std::string who() const { return worker_named(command_); }

  // A new trial: what the worker printed for earlier ones does not explain this one's failure.
  void begin_trial() {
    process_->clear_stderr_tail();
    std::lock_guard lock(noise_mutex_);
    noise_.clear();
  }

  // "; stderr: <its last line>", then on the next lines the last stderr lines and what it printed
  // outside the protocol, for a failure message. Its first line stands alone: the console shows
  // only that one.
  std::string details() const {
    std::string out;
    const std::string tail = process_ ? process_->stderr_tail() : "";
    if (!tail.empty()) {
      const auto last_nl = tail.rfind('\n');
      const std::string last = last_nl == std::string::npos ? tail : tail.substr(last_nl + 1);
      out += "; stderr: " + excerpt(last);
      if (last_nl != std::string::npos) out += "\nits last stderr lines:\n" + tail;
    }
    std::lock_guard lock(noise_mutex_);
    if (!noise_.empty()) {
      out += "\nlines it printed to stdout outside the protocol:";
      for (const auto& n : noise_) out += "\n" + n;
    }
    return out;
  }

 private:
  void on_line(const std::string& line) {
    json m;
    try {
      m = parse_line(line);
    } catch (const ProtocolError& e) {
      if (meant_as_message(line)) {
        // Python's json.dumps writes NaN and Infinity, which are not JSON: the request this
        // answered would otherwise wait out its time cap.
        lose("sent an answer that is not a protocol message (" + std::string(e.what()) + "): " + excerpt(line));
        return;
      }
      // print() in a kernel's build function: not ours, kept for the failure message.
      std::lock_guard lock(noise_mutex_);
      noise_.push_back(excerpt(line));
      if (noise_.size() > 5) noise_.pop_front();
      return;
    }
    std::lock_guard lock(mutex_);
    // A worker already given up on may still answer requests that stopped waiting when it was
    // lost; the first reason it was lost is the one its trial keeps.
    if (dead_) return;
    const std::string type = m.at("type").get<std::string>();
    if (type == "hello" && !hello_) {
      hello_ = std::move(m);
    } else if (m.contains("id") && m.at("id").is_number_integer() && pending_.count(m.at("id").get<std::int64_t>())) {
      pending_[m.at("id").get<std::int64_t>()] = std::move(m);
    } else if (m.contains("id") && m.at("id").is_number_integer() && abandoned_.erase(m.at("id").get<std::int64_t>())) {
      // the answer to a request that stopped waiting
    } else if (type == "error" && !hello_) {
      death_ = "refused ktune's hello: " + m.value("message", "");
      dead_ = true;  // killed when this connection is dropped
    } else if (type != "bye") {
      death_ = "broke the protocol (a '" + type + "' message that answers no request: " + excerpt(line) + ")";
      dead_ = true;
    }
    cv_.notify_all();
  }
  void on_exit(const std::string& how) { lose(how); }
  // The worker can answer nothing more: every waiting request learns why (the first reason).
  void lose(const std::string& why) {
    std::lock_guard lock(mutex_);
    if (!dead_) death_ = why;
    dead_ = true;
    cv_.notify_all();
  }

  std::string command_;
  std::atomic<std::int64_t> next_id_{1};
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::optional<json> hello_;
  std::map<std::int64_t, std::optional<json>> pending_;
  std::set<std::int64_t> abandoned_;
  bool dead_ = false, killed_ = false;
  std::string death_;
  mutable std::mutex noise_mutex_;
  std::deque<std::string> noise_;
  std::unique_ptr<WorkerProcess> process_;  // last: stopped (reader joined) before the rest goes
};

namespace {

// A worker that calls a result valid is held to its own numbers under the run's tolerance: one
// that compares with another tolerance, or not at all, would put a wrong config in the registry.
void check_validation(const Validation& v, const Tolerance& tol, const std::string& who) {
  auto wrong = [&](const std::string& why) {
    throw TrialFailure(TrialStatus::WrongResult, who + " called the result valid, but " + why);
  };
  const std::string mismatch = "mismatch_fraction " + number_text(v.mismatch_fraction);
  const std::string error = "max_abs_error " + number_text(v.max_abs_error);
  if (!(v.mismatch_fraction >= 0 && v.mismatch_fraction <= 1)) wrong("its " + mismatch + " is no fraction (0 to 1)");
  if (v.mismatch_fraction > tol.max_mismatch_fraction)
    wrong("it reported " + mismatch + "; the run allows " + number_text(tol.max_mismatch_fraction) +
          " (--max-mismatch)");
  if (std::isnan(v.max_abs_error) || v.max_abs_error < 0) wrong("its " + error + " is no error");
  // With every element within atol + rtol*|ref|, no error is infinite, and none exceeds atol when
  // rtol is 0.
  if (v.mismatch_fraction == 0 && (std::isinf(v.max_abs_error) || (tol.rtol == 0 && v.max_abs_error > tol.atol)))
    wrong("it reported " + error + " with no element beyond atol " + number_text(tol.atol) + " + rtol " +
          number_text(tol.rtol) + "*|ref|");
}

// A config prepared on one worker; a restarted worker prepares it again when asked to measure it.
class WorkerKernel : public PreparedKernel {
 public:
  Config config;
  bool baseline = false;
  std::weak_ptr<Connection> prepared_on;
  // What its samples' answers said of the device (a sample's own, from at most one reading).
  std::vector<ConditionsReading> readings;
};

class WorkerSession : public ProblemSession {
 public:
  WorkerSession(WorkerBackend& backend, std::string family, Problem problem, std::uint64_t seed)
      : backend_(backend), family_(std::move(family)), problem_(std::move(problem)), seed_(seed) {}

  std::unique_ptr<PreparedKernel> prepare(const Config& config) override {
    auto kernel = std::make_unique<WorkerKernel>();
    kernel->config = config;
    const auto conn = backend_.connection();
    // A worker that died under another config, or is slow to answer while it measures one, is no
    // verdict on this config: it is prepared again, under the hard caps, when it is measured.
    const auto r = call(*conn, request("prepare", config), backend_.options().prepare_timeout_s * 1000, "", false);
    if (!r) return kernel;
    if (r->status != TrialStatus::Ok) throw TrialFailure(r->status, r->message);
    kernel->compile_time_s = r->compile_time_s;
    kernel->prepared_on = conn;
    return kernel;
  }

  Validation validate(PreparedKernel& kernel, const Tolerance& tol) override {
    return run_measure(kernel, tol, MeasureSettings{}, std::nullopt, true).validation;
  }

  // The baseline, when the worker's backend has one; nullptr otherwise.
  std::unique_ptr<PreparedKernel> prepare_baseline() override {
    const auto conn = backend_.connection();
    Request req = request("prepare", {});
    req.baseline = true;
    const auto r = call(*conn, req, backend_.options().prepare_timeout_s * 1000, "", false);
    if (!r || r->status != TrialStatus::Ok) return nullptr;
    baseline_name_ = r->baseline_name;
    auto kernel = std::make_unique<WorkerKernel>();
    kernel->baseline = true;
    kernel->prepared_on = conn;
    return kernel;
  }
  std::string baseline_name() const override { return baseline_name_; }

  // One timed sample (the tuner's paired measurement of the best config against the baseline).
  double sample(PreparedKernel& kernel, const SampleRequest& s) override {
    auto& k = static_cast<WorkerKernel&>(kernel);
    Request req = request("sample", k.config);
    req.baseline = k.baseline;
    req.launches = s.launches;
    req.settings.method = s.method;
    req.settings.rotate_buffers = s.rotate_buffers;
    req.timeout_ms = std::max(0.0, std::chrono::duration<double, std::milli>(s.deadline - Clock::now()).count());
    const auto conn = backend_.connection();
    conn->begin_trial();
    const auto r = call(*conn, req, req.timeout_ms + backend_.options().cap_margin_ms, "sample", true);
    if (r->status != TrialStatus::Ok) fail(*conn, *r);
    const double ns = checked_sample(r->ns, who());
    if (const auto& c = r->conditions; c.count(kSmClockMhz))
      k.readings.push_back({c.at(kSmClockMhz), c.count(kPowerW) ? c.at(kPowerW) : 0,
                            c.count(kClockLimited) && c.at(kClockLimited) >= 0.5});
    return ns;
  }

  Conditions take_conditions(PreparedKernel& kernel) override {
    return summarize_conditions(std::exchange(static_cast<WorkerKernel&>(kernel).readings, {}));
  }

  Measured validate_and_measure(PreparedKernel& kernel, const Tolerance& tol, const MeasureSettings& settings,
                                std::optional<double> best_median_ns) override {
    return run_measure(kernel, tol, settings, best_median_ns, false);
  }

 private:
  std::string who() const { return worker_named(backend_.options().command()); }

  Request request(const std::string& type, const Config& config) const {
    Request r;
    r.type = type;
    r.family = family_;
    r.problem = problem_;
    r.config = config;
    r.seed = seed_;
    return r;
  }

  // One request on `conn`, with every way the worker can fail it turned into a TrialFailure
  // naming `what`; with `verdict` false, a dead or silent worker is nullopt instead.
  std::optional<Reply> call(Connection& conn, const Request& req, double timeout_ms, const std::string& what,
                            bool verdict) {
    try {
      const json answer = conn.call(to_json(req), ms(timeout_ms));
      // An `error` answer is the protocol's own way to refuse a request (an unknown type, a value
      // out of range): said as such, and the worker is started again for the next one.
      if (answer.value("type", "") == "error") {
        conn.kill();
        const std::string message = answer.contains("message") && answer.at("message").is_string()
                                        ? answer.at("message").get<std::string>()
                                        : std::string("(no message)");
        throw TrialFailure(TrialStatus::Crashed, who() + " answered " + req.type + " with an error: " + message);
      }
      return reply_from_json(answer);
    } catch (const WorkerSilent&) {
      if (!verdict) return std::nullopt;
      conn.kill();
      throw TrialFailure(TrialStatus::Timeout, what + ": no answer within " +
                                                   std::to_string(static_cast<long>(timeout_ms)) +
                                                   " ms; the worker was killed and starts again" + conn.details());
    } catch (const WorkerLost& lost) {
      if (!verdict) return std::nullopt;
      throw TrialFailure(TrialStatus::Crashed, lost.why);
    } catch (const ProtocolError& e) {
      conn.kill();
      throw TrialFailure(TrialStatus::Crashed, std::string("the worker broke the protocol: ") + e.what());
    }
  }

  // A failed measure or sample. After `crashed` the worker exits (its device may be unusable);
  // it is dropped here at once so that the next config, sent before its exit is seen, is not
  // blamed for it: the next request starts a fresh worker.
  [[noreturn]] static void fail(Connection& conn, const Reply& r) {
    if (r.status == TrialStatus::Crashed) conn.kill();
    throw TrialFailure(r.status, r.message);
  }

  Measured run_measure(PreparedKernel& kernel, const Tolerance& tol, const MeasureSettings& settings,
                       std::optional<double> best, bool validate_only) {
    auto& k = static_cast<WorkerKernel&>(kernel);
    const auto conn = backend_.connection();
    conn->begin_trial();
    Request req = request("measure", k.config);
    req.tolerance = tol;
    req.settings = settings;
    req.best_median_ns = best;
    req.validate_only = validate_only;
    const auto& o = backend_.options();
    if (k.prepared_on.lock() != conn) {  // prepared on a worker that is gone (or never)
      const auto p = call(*conn, request("prepare", k.config), o.prepare_timeout_s * 1000, "prepare", true);
      if (p->status != TrialStatus::Ok) throw TrialFailure(p->status, p->message);
      k.compile_time_s = p->compile_time_s;
      k.prepared_on = conn;
    }
    const double cap_ms = settings.max_ms_per_config + o.cap_margin_ms;
    const auto r = call(*conn, req, cap_ms,
                        "measure (the hard cap is --max-ms-per-config plus --hang-margin-ms " +
                            std::to_string(static_cast<long>(o.cap_margin_ms)) + ")",
                        true);
    if (r->status != TrialStatus::Ok && r->samples_ns.empty()) fail(*conn, *r);
    if (!validate_only && r->samples_ns.empty())
      throw TrialFailure(TrialStatus::Crashed, who() + " measured no samples and gave no reason");
    if (r->validated) check_validation(r->validation, tol, who());
    for (const double ns : r->samples_ns) checked_sample(ns, who());
    Measured m;
    m.validation = r->validation;
    m.outcome.status = r->status;
    m.outcome.note = r->message;
    m.outcome.samples_ns = r->samples_ns;
    m.outcome.stats = summarize(r->samples_ns);
    m.metrics = r->metrics;
    return m;
  }

  WorkerBackend& backend_;
  std::string family_;
  Problem problem_;
  std::uint64_t seed_;
  std::string baseline_name_;
};

}  // namespace

WorkerBackend::WorkerBackend(WorkerOptions options) : options_(std::move(options)) {
  live_ = std::make_shared<Connection>(options_);
  try {
    hello_ = hello_from_json(live_->hello());
  } catch (const ProtocolError& e) {
    live_->kill();
    throw RunError(worker_named(options_.command()) + ": " + e.what());
  }
}

WorkerBackend::~WorkerBackend() = default;

std::string WorkerBackend::name() const { return hello_.backend; }
std::vector<DeviceInfo> WorkerBackend::devices() { return hello_.devices; }

std::vector<KernelFamily> WorkerBackend::families() const {
  std::vector<KernelFamily> out;
  for (const auto& f : hello_.families) out.push_back(f.family);
  return out;
}

std::vector<std::pair<std::string, std::string>> WorkerBackend::versions() const {
  auto v = hello_.versions;
  v.emplace_back("worker", hello_.worker + " (protocol " + std::to_string(hello_.protocol) + ")");
  return v;
}

KernelFamily WorkerBackend::load_family_spec(const std::filesystem::path& spec) {
  for (const auto& f : hello_.families)
    if (f.family.source == spec.string()) return f.family;
  throw InputError("the worker does not offer the kernel spec " + spec.string() +
                   " (start it with --kernel-spec, or name one of its families)");
}

std::unique_ptr<ProblemSession> WorkerBackend::open(const DeviceInfo&, const KernelFamily& family,
                                                    const Problem& problem, std::uint64_t seed) {
  bool offered = false;
  for (const auto& f : hello_.families) offered = offered || f.family.name == family.name;
  if (!offered) (void)this->family(family.name);  // throws InputError listing what the worker offers
  return std::make_unique<WorkerSession>(*this, family.name, problem, seed);
}

std::shared_ptr<Connection> WorkerBackend::connection() {
  std::lock_guard lock(mutex_);
  if (!live_ || !live_->alive()) {
    live_.reset();  // the dead one's reader is joined before the next one starts
    live_ = std::make_shared<Connection>(options_);
    ++restarts_;
  }
  return live_;
}

int WorkerBackend::restarts() const {
  std::lock_guard lock(mutex_);
  return restarts_;
}

int WorkerBackend::current_pid() const {
  std::lock_guard lock(mutex_);
  return live_ && live_->alive() ? live_->pid() : -1;
}

}  // namespace ktune::worker
