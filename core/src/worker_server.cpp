#include "ktune/worker_server.h"

#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <future>
#include <map>
#include <thread>
#include <utility>

#include "ktune/error.h"
#include "ktune/version.h"
#include "ktune/worker_protocol.h"

namespace ktune::worker {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

class LineReader {
 public:
  explicit LineReader(int fd) : fd_(fd) {}
  bool next(std::string& line) {
    while (true) {
      const auto nl = buf_.find('\n');
      if (nl != std::string::npos) {
        line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return true;
      }
      char chunk[65536];
      const ssize_t n = ::read(fd_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (buf_.empty()) return false;
        line = std::exchange(buf_, {});
        return true;
      }
      buf_.append(chunk, static_cast<std::size_t>(n));
    }
  }

 private:
  int fd_;
  std::string buf_;
};

class Writer {
 public:
  explicit Writer(int fd) : fd_(fd) {}
  void operator()(const json& m) {
    const std::string line = to_line(m);
    std::lock_guard lock(mutex_);
    std::size_t done = 0;
    while (done < line.size()) {
      const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // ktune is gone; the reader sees EOF next
      done += static_cast<std::size_t>(n);
    }
  }

 private:
  int fd_;
  std::mutex mutex_;
};

struct PrepareResult {
  std::shared_ptr<ProblemSession> session;  // kept alive as long as its kernel
  std::shared_ptr<PreparedKernel> kernel;
  TrialStatus status = TrialStatus::Ok;
  std::string error;
  double compile_time_s = 0;
  std::string baseline_name;
};

class Server {
 public:
  Server(Backend& backend, DeviceInfo device, std::vector<KernelFamily> families, Writer& write)
      : backend_(backend), device_(std::move(device)), families_(std::move(families)), write_(write) {
    measurer_ = std::thread([this] { measure_loop(); });
  }
  ~Server() {
    {
      std::lock_guard lock(queue_mutex_);
      stopping_ = true;
    }
    queue_cv_.notify_all();
    measurer_.join();
    // Prepares still running finish before the maps they use go (see prepare for the lock).
    std::map<std::string, std::shared_future<PrepareResult>> running;
    {
      std::lock_guard lock(state_mutex_);
      running.swap(prepared_);
    }
  }

  void prepare(const Request& r) {
    auto fut = std::async(std::launch::async, [this, r] {
                 PrepareResult p = build(r);
                 if (p.status == TrialStatus::Ok)
                   write_(prepared_reply(r.id, p.compile_time_s, p.baseline_name));
                 else if (p.status == TrialStatus::Crashed)
                   poison();  // the device faulted under another config: no verdict on this one
                 else
                   write_(failed_reply(r.id, p.status, p.error));
                 return p;
               }).share();
    // A future of std::async waits for its task when it goes, and the task may need the lock:
    // a replaced one goes after the lock is released.
    std::shared_future<PrepareResult> replaced;
    std::lock_guard lock(state_mutex_);
    replaced = std::exchange(prepared_[kernel_key(r)], std::move(fut));
  }

  void measure(Request r) {
    {
      std::lock_guard lock(queue_mutex_);
      queue_.push_back(std::move(r));
    }
    queue_cv_.notify_one();
  }

  const KernelFamily* family(const std::string& name) const {
    for (const auto& f : families_)
      if (f.name == name) return &f;
    return nullptr;
  }

 private:
  static std::string problem_key(const Request& r) {
    return r.family + "|" + r.problem.key() + "|" + std::to_string(r.seed);
  }
  static std::string kernel_key(const Request& r) {
    return problem_key(r) + "|" + (r.baseline ? std::string("(baseline)") : r.config.key());
  }

  // The problem's session; opening one for a new problem drops the others (their workloads can
  // be large: GPU memory). Kernels still prepared for them keep their session alive.
  std::shared_ptr<ProblemSession> session(const Request& r) {
    std::vector<std::shared_future<PrepareResult>> dropped;  // released after the lock (see prepare)
    std::lock_guard lock(state_mutex_);
    const auto key = problem_key(r);
    auto it = sessions_.find(key);
    if (it != sessions_.end()) return it->second;
    sessions_.clear();
    held_.clear();
    for (auto p = prepared_.begin(); p != prepared_.end();) {
      if (p->first.rfind(key + "|", 0) == 0) {
        ++p;
        continue;
      }
      dropped.push_back(std::move(p->second));
      p = prepared_.erase(p);
    }
    const KernelFamily* f = family(r.family);
    if (!f) throw InputError("this worker does not offer the family '" + r.family + "'");
    return sessions_[key] = std::shared_ptr<ProblemSession>(backend_.open(device_, *f, r.problem, r.seed));
  }

  PrepareResult build(const Request& r) {
    PrepareResult p;
    const auto t0 = Clock::now();
    try {
      p.session = session(r);
      if (r.baseline) {
        p.kernel = p.session->prepare_baseline();
        if (!p.kernel) throw TrialFailure(TrialStatus::LaunchError, "this backend has no baseline for " + r.family);
        p.baseline_name = p.session->baseline_name();
      } else {
        p.kernel = p.session->prepare(r.config);
      }
      p.compile_time_s = p.kernel->compile_time_s > 0 ? p.kernel->compile_time_s
                                                      : std::chrono::duration<double>(Clock::now() - t0).count();
    } catch (const TrialFailure& e) {
      p.status = e.status();
      p.error = e.what();
    } catch (const std::exception& e) {
      p.status = TrialStatus::CompileError;
      p.error = e.what();
    }
    return p;
  }

  // A `crashed` outcome (a sticky GPU fault, an exception from the backend) leaves this process
  // suspect: some drivers refuse every later context. The worker answers the measure that
  // crashed, then exits, and ktune starts a fresh one (docs/worker-protocol.md).
  void poison() {
    {
      std::lock_guard lock(queue_mutex_);
      poisoned_ = true;
    }
    queue_cv_.notify_all();
  }

  void measure_loop() {
    while (true) {
      Request r;
      {
        std::unique_lock lock(queue_mutex_);
        queue_cv_.wait(lock, [this] { return stopping_ || poisoned_ || !queue_.empty(); });
        if (poisoned_) std::_Exit(3);
        if (queue_.empty()) return;
        r = std::move(queue_.front());
        queue_.pop_front();
      }
      const json reply = run(r);
      write_(reply);
      if (reply.value("status", "") == to_string(TrialStatus::Crashed)) std::_Exit(3);
    }
  }

  // The kernel a sample times: kept between samples (the tuner alternates two) until the
  // problem changes.
  json sample(const Request& r) {
    std::shared_ptr<PrepareResult> p;
    {
      std::lock_guard lock(state_mutex_);
      const auto it = held_.find(kernel_key(r));
      if (it != held_.end()) p = it->second;
    }
    if (!p) {
      p = std::make_shared<PrepareResult>(take_prepared(r));
      if (p->status != TrialStatus::Ok) return failed_reply(r.id, p->status, p->error);
      std::lock_guard lock(state_mutex_);
      held_[kernel_key(r)] = p;
    }
    try {
      SampleRequest s;
      s.method = r.settings.method;
      s.rotate_buffers = r.settings.rotate_buffers;
      s.launches = r.launches;
      s.deadline = Clock::now() + std::chrono::microseconds(static_cast<std::int64_t>(r.timeout_ms * 1000));
      const double ns = p->session->sample(*p->kernel, s);
      return sampled_reply(r.id, ns, p->session->take_conditions(*p->kernel));
    } catch (const TrialFailure& e) {
      return failed_reply(r.id, e.status(), e.what());
    } catch (const std::exception& e) {
      return failed_reply(r.id, TrialStatus::Crashed, e.what());
    }
  }

  PrepareResult take_prepared(const Request& r) {
    std::shared_future<PrepareResult> fut;
    {
      std::lock_guard lock(state_mutex_);
      const auto it = prepared_.find(kernel_key(r));
      if (it != prepared_.end()) {
        fut = std::move(it->second);
        prepared_.erase(it);
      }
    }
    return fut.valid() ? fut.get() : build(r);
  }

  json run(const Request& r) {
    if (r.type == "sample") return sample(r);
    const PrepareResult p = take_prepared(r);
    if (p.status != TrialStatus::Ok) return failed_reply(r.id, p.status, p.error);
    try {
      Measured m;
      if (r.validate_only)
        m.validation = p.session->validate(*p.kernel, r.tolerance);
      else
        m = p.session->validate_and_measure(*p.kernel, r.tolerance, r.settings, r.best_median_ns);
      return measured_reply(r.id, m, p.compile_time_s);
    } catch (const TrialFailure& e) {
      return failed_reply(r.id, e.status(), e.what());
    } catch (const std::exception& e) {
      return failed_reply(r.id, TrialStatus::Crashed, e.what());
    }
  }

  Backend& backend_;
  DeviceInfo device_;
  std::vector<KernelFamily> families_;
  Writer& write_;
  std::mutex state_mutex_;
  std::map<std::string, std::shared_ptr<ProblemSession>> sessions_;
  std::map<std::string, std::shared_future<PrepareResult>> prepared_;
  std::map<std::string, std::shared_ptr<PrepareResult>> held_;
  std::mutex queue_mutex_;
  std::condition_variable queue_cv_;
  std::deque<Request> queue_;
  bool stopping_ = false, poisoned_ = false;
  std::thread measurer_;
};

}  // namespace

int serve(Backend& backend, const ServeOptions& options, int in_fd, int out_fd) {
  LineReader in(in_fd);
  Writer write(out_fd);
  std::string line;
  if (!in.next(line)) return 0;
  try {
    check_client_hello(parse_line(line));
  } catch (const ProtocolError& e) {
    write(error_reply(std::nullopt, e.what()));
    return 2;
  }
  const auto devices = backend.devices();
  if (options.device < 0 || static_cast<std::size_t>(options.device) >= devices.size()) {
    write(error_reply(std::nullopt,
                      "the " + backend.name() + " backend has no device " + std::to_string(options.device)));
    return 2;
  }
  Hello hello;
  hello.worker = options.worker_name + " " + version();
  hello.backend = backend.name();
  hello.devices = {devices[static_cast<std::size_t>(options.device)]};
  hello.device_count = devices.size();
  hello.versions = backend.versions();
  std::vector<KernelFamily> families = backend.families();
  if (!options.kernel_spec.empty()) families.push_back(backend.load_family_spec(options.kernel_spec));
  for (const auto& f : families) hello.families.push_back({f, true});
  write(to_json(hello));

  std::optional<std::int64_t> bye;
  {
    Server server(backend, hello.devices.front(), families, write);
    while (!bye && in.next(line)) {
      std::optional<std::int64_t> id;
      try {
        const json m = parse_line(line);
        if (m.contains("id") && m.at("id").is_number_integer()) id = m.at("id").get<std::int64_t>();
        const Request r = request_from_json(m);
        if (r.type == "shutdown") {
          bye = r.id;
          continue;
        }
        if (!server.family(r.family)) throw ProtocolError("this worker does not offer the family '" + r.family + "'");
        if (r.type == "prepare")
          server.prepare(r);
        else
          server.measure(r);
      } catch (const ProtocolError& e) {
        write(error_reply(id, e.what()));
      }
    }
  }  // the measures already queued finish first
  if (bye) write(bye_reply(*bye));
  return 0;
}

}  // namespace ktune::worker
