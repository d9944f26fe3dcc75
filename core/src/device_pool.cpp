#include "ktune/device_pool.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "ktune/error.h"

namespace ktune {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Fixed-size pool that prepares (compiles) configs ahead of measurement.
class PreparePool {
 public:
  explicit PreparePool(unsigned threads) {
    for (unsigned i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }
  ~PreparePool() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      queue_.clear();  // queued work of a cancelled run is dropped; running tasks finish
    }
    cv_.notify_all();
    for (auto& w : workers_) w.join();
  }
  template <typename F>
  auto submit(F f) -> std::future<decltype(f())> {
    auto task = std::make_shared<std::packaged_task<decltype(f())()>>(std::move(f));
    auto fut = task->get_future();
    {
      std::lock_guard lock(mutex_);
      queue_.emplace_back([task] { (*task)(); });
    }
    cv_.notify_one();
    return fut;
  }

 private:
  void work() {
    while (true) {
      std::function<void()> job;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      job();
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::vector<std::thread> workers_;
  bool stopping_ = false;
};

struct Prepared {
  std::unique_ptr<PreparedKernel> kernel;
  TrialStatus status = TrialStatus::Ok;
  std::string error;
  double compile_time_s = 0;
  std::exception_ptr fatal;  // a RunError: the run cannot go on
};

Prepared prepare(ProblemSession& session, const Config& c) {
  Prepared p;
  const auto t0 = Clock::now();
  try {
    p.kernel = session.prepare(c);
    p.compile_time_s = p.kernel->compile_time_s > 0 ? p.kernel->compile_time_s : seconds_since(t0);
  } catch (const TrialFailure& e) {
    p.status = e.status();
    p.error = e.what();
    p.compile_time_s = seconds_since(t0);
  } catch (const RunError&) {
    p.fatal = std::current_exception();
  } catch (const std::exception& e) {
    p.status = TrialStatus::CompileError;
    p.error = e.what();
  }
  return p;
}

// Validates and measures a prepared config; a failure is the trial's status, a RunError ends the run.
Trial measure_prepared(ProblemSession& session, Prepared p, const Config& config, const Tolerance& tol,
                       const MeasureSettings& settings, std::optional<double> best) {
  if (p.fatal) std::rethrow_exception(p.fatal);
  Trial t;
  t.config = config;
  t.compile_time_s = p.compile_time_s;
  t.status = p.status;
  t.error = p.error;
  if (!p.kernel) return t;
  try {
    Measured m = session.validate_and_measure(*p.kernel, tol, settings, best);
    t.max_abs_error = m.validation.max_abs_error;
    t.mismatch_fraction = m.validation.mismatch_fraction;
    t.status = m.outcome.status;
    t.error = m.outcome.note;
    t.samples_ns = std::move(m.outcome.samples_ns);
    t.stats = m.outcome.stats;
    t.metrics = std::move(m.metrics);
  } catch (const TrialFailure& e) {
    t.status = e.status();
    t.error = e.what();
  } catch (const RunError&) {
    throw;
  } catch (const std::exception& e) {
    t.status = TrialStatus::Crashed;
    t.error = e.what();
  }
  return t;
}

}  // namespace

struct DevicePool::Slot {
  std::unique_ptr<ProblemSession> session;
  std::unique_ptr<PreparePool> pool;  // last, so it goes first: its queued work refers to the session
};

DevicePool::DevicePool(std::vector<Lane> lanes, unsigned compile_threads)
    : lanes_(std::move(lanes)), compile_threads_(std::max(1u, compile_threads)) {
  if (lanes_.empty()) throw InputError("a run measures on at least one device");
}

DevicePool::~DevicePool() = default;

void DevicePool::open(const KernelFamily& family, const Problem& problem, std::uint64_t seed) {
  slots_.clear();
  const unsigned per_lane = std::max(1u, compile_threads_ / static_cast<unsigned>(lanes_.size()));
  for (const auto& lane : lanes_) {
    auto slot = std::make_unique<Slot>();
    slot->session = lane.backend->open(lane.device, family, problem, seed);
    slot->pool = std::make_unique<PreparePool>(per_lane);
    slots_.push_back(std::move(slot));
  }
}

ProblemSession& DevicePool::session(std::size_t lane) { return *slots_.at(lane)->session; }

void DevicePool::run_lane(std::size_t lane, const std::vector<Config>& batch, const Tolerance& tol,
                          const MeasureSettings& settings,
                          const std::function<std::optional<std::size_t>(bool ahead)>& claim, std::size_t lookahead,
                          const std::function<bool(std::size_t)>& start,
                          const std::function<void(std::size_t, Trial)>& finish,
                          const std::function<std::optional<double>()>& best) {
  Slot& slot = *slots_.at(lane);
  std::deque<std::pair<std::size_t, std::future<Prepared>>> ahead;
  while (true) {
    while (ahead.size() < lookahead) {
      const auto i = claim(!ahead.empty());
      if (!i) break;
      // The config by value: a cancelled batch's queued prepares may run after the batch is gone.
      ahead.emplace_back(
          *i, slot.pool->submit([session = slot.session.get(), c = batch[*i]] { return prepare(*session, c); }));
    }
    if (ahead.empty()) return;
    auto [i, future] = std::move(ahead.front());
    ahead.pop_front();
    if (!start(i)) return;
    Trial t = measure_prepared(*slot.session, future.get(), batch[i], tol, settings, best ? best() : std::nullopt);
    // Which of several devices measured it (trials.csv's metrics column): a device slower than its
    // twins (throttled, shared) shows in its trials.
    if (lanes_.size() > 1) t.metrics["device"] = lanes_[lane].device.index;
    finish(i, std::move(t));
  }
}

void DevicePool::measure(const std::vector<Config>& batch, const Tolerance& tol, const MeasureSettings& settings,
                         const Hooks& hooks) {
  if (slots_.size() != lanes_.size()) throw InputError("DevicePool::measure before open");
  if (lanes_.size() > 1) return measure_concurrently(batch, tol, settings, hooks);
  // One device: every config is prepared ahead, then measured in the order proposed, on this thread.
  std::size_t next = 0;
  auto claim = [&](bool) -> std::optional<std::size_t> {
    if (next >= batch.size()) return std::nullopt;
    return next++;
  };
  run_lane(0, batch, tol, settings, claim, batch.size(), hooks.start, hooks.finish, hooks.best);
}

// Each device on its own thread; the hooks run on this one, fed through a queue, so the tuner's
// bookkeeping (ids, journal, events) stays single-threaded.
void DevicePool::measure_concurrently(const std::vector<Config>& batch, const Tolerance& tol,
                                      const MeasureSettings& settings, const Hooks& hooks) {
  struct Event {
    enum Kind { Start, Finish, Failed, Done } kind;
    std::size_t index = 0;
    Trial trial;
    std::exception_ptr error;
    std::size_t lane = 0;
  };
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<Event> events;
  std::map<std::size_t, bool> granted;  // lane -> its pending start's answer
  std::size_t next = 0;
  bool stopping = false;
  auto post = [&](Event e) {
    std::lock_guard lock(mutex);
    events.push_back(std::move(e));
    cv.notify_all();
  };
  // A config to prepare ahead is taken only while the batch has more left than there are other
  // devices: the tail of a batch goes to idle devices first, not into one device's queue.
  auto claim = [&](bool ahead) -> std::optional<std::size_t> {
    std::lock_guard lock(mutex);
    const std::size_t left = batch.size() - next;
    if (stopping || left == 0 || (ahead && left < lanes_.size())) return std::nullopt;
    return next++;
  };
  const std::size_t lookahead = std::max<std::size_t>(2, compile_threads_ / lanes_.size());

  std::vector<std::thread> threads;
  for (std::size_t l = 0; l < lanes_.size(); ++l)
    threads.emplace_back([&, l] {
      auto start = [&](std::size_t i) {
        std::unique_lock lock(mutex);
        if (stopping) return false;
        events.push_back({Event::Start, i, {}, nullptr, l});
        cv.notify_all();
        cv.wait(lock, [&] { return granted.count(l) > 0; });
        const bool go = granted[l];
        granted.erase(l);
        return go;
      };
      auto finish = [&](std::size_t i, Trial t) { post({Event::Finish, i, std::move(t), nullptr, l}); };
      try {
        run_lane(l, batch, tol, settings, claim, lookahead, start, finish, hooks.best);
      } catch (...) {
        post({Event::Failed, 0, {}, std::current_exception(), l});
      }
      post({Event::Done, 0, {}, nullptr, l});
    });

  std::exception_ptr first_error;
  std::size_t running = threads.size();
  while (running > 0) {
    Event e;
    {
      std::unique_lock lock(mutex);
      cv.wait(lock, [&] { return !events.empty(); });
      e = std::move(events.front());
      events.pop_front();
    }
    bool go = false;
    try {
      if (e.kind == Event::Start && !first_error) go = hooks.start(e.index);
      if (e.kind == Event::Finish && !first_error) hooks.finish(e.index, std::move(e.trial));
    } catch (...) {
      first_error = std::current_exception();
    }
    if (e.kind == Event::Failed && !first_error) first_error = e.error;
    if (e.kind == Event::Done) --running;
    std::lock_guard lock(mutex);
    if (first_error || (e.kind == Event::Start && !go)) stopping = true;
    if (e.kind == Event::Start) granted[e.lane] = go;
    cv.notify_all();
  }
  for (auto& t : threads) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace ktune
