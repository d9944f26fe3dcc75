#include "ktune/worker_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <future>
#include <utility>

#include "ktune/error.h"

namespace ktune::worker {

namespace {

constexpr std::size_t kTailLines = 40;
constexpr std::size_t kMaxLine = 64 << 20;  // a runaway line is cut here, and then fails to parse
// A worker whose stdout closed has this long to exit by itself (so that its own exit status is
// what is reported) before it is killed: it can answer nothing more.
constexpr auto kEofGrace = std::chrono::milliseconds(1000);
constexpr int kExitPollMs = 20;

// PR_SET_PDEATHSIG fires when the *thread* that forked the child ends, not the process: workers
// restarted from a short-lived compile thread would be killed with it. So every fork happens on
// this one thread, which lives as long as the process.
class Spawner {
 public:
  static Spawner& instance() {
    static Spawner s;
    return s;
  }
  pid_t spawn(std::function<pid_t()> fork_exec) {
    std::packaged_task<pid_t()> task(std::move(fork_exec));
    auto result = task.get_future();
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(task));
    }
    cv_.notify_one();
    return result.get();
  }

 private:
  Spawner() : thread_([this] { run(); }) {}
  ~Spawner() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  void run() {
    std::unique_lock lock(mutex_);
    while (true) {
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      auto task = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<pid_t()>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

// Whether `pid` has ended, without reaping it (the reader's waitpid does that).
bool has_exited(pid_t pid) {
  siginfo_t info{};
  return waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid != 0;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "was killed by " + signal_name(WTERMSIG(status));
  return "ended with wait status " + std::to_string(status);
}

}  // namespace

std::string signal_name(int sig) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
  const char* abbrev = sigabbrev_np(sig);
  const std::string name = abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
#else
  const std::string name = "signal " + std::to_string(sig);
#endif
  const char* text = strsignal(sig);
  return text ? name + " (" + text + ")" : name;
}

WorkerProcess::WorkerProcess(const std::vector<std::string>& argv, LineHandler on_line, ExitHandler on_exit)
    : on_line_(std::move(on_line)), on_exit_(std::move(on_exit)) {
  if (argv.empty()) throw RunError("empty worker command");
  // stdin is a socket so that writing to a dead worker is an error (MSG_NOSIGNAL), not SIGPIPE.
  int in[2], out[2], err[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0)
    throw RunError(std::string("socketpair: ") + strerror(errno));
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) throw RunError(std::string("pipe: ") + strerror(errno));
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = getpid();
  const int exec_failed_code = 127;
  pid_ = Spawner::instance().spawn([&]() -> pid_t {
    const pid_t pid = fork();
    if (pid != 0) return pid;
    // Child: only async-signal-safe calls until exec.
    setpgid(0, 0);
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(exec_failed_code);  // ktune died before the line above
#endif
    dup2(in[1], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    signal(SIGPIPE, SIG_DFL);
    execvp(args[0], args.data());
    const char msg[] = "ktune: cannot execute the worker command\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(exec_failed_code);
  });
  const int spawn_errno = errno;
  ::close(in[1]);
  ::close(out[1]);
  ::close(err[1]);
  in_fd_ = in[0];
  out_fd_ = out[0];
  err_fd_ = err[0];
  if (pid_ < 0) {
    ::close(in_fd_), ::close(out_fd_), ::close(err_fd_);
    throw RunError("cannot start worker '" + argv[0] + "': " + strerror(spawn_errno));
  }
  setpgid(pid_, pid_);  // also from this side, so kill(-pid) works even before the child ran
  reader_ = std::thread([this] { read_loop(); });
}

WorkerProcess::~WorkerProcess() {
  close_input();
  {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
    while (std::chrono::steady_clock::now() < deadline) {
      {
        std::lock_guard lock(exit_mutex_);
        if (exited_) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  kill();
  if (reader_.joinable()) reader_.join();
  ::close(in_fd_);
}

bool WorkerProcess::send(const std::string& line) {
  std::lock_guard lock(send_mutex_);
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::send(in_fd_, line.data() + done, line.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

void WorkerProcess::kill() {
  std::lock_guard lock(exit_mutex_);
  if (!exited_ && pid_ > 0) ::kill(-pid_, SIGKILL);
}

void WorkerProcess::close_input() { ::shutdown(in_fd_, SHUT_WR); }

std::string WorkerProcess::stderr_tail(std::size_t lines) const {
  std::lock_guard lock(tail_mutex_);
  std::string out;
  const std::size_t from = tail_.size() > lines ? tail_.size() - lines : 0;
  for (std::size_t i = from; i < tail_.size(); ++i) out += (out.empty() ? "" : "\n") + tail_[i];
  return out;
}

void WorkerProcess::read_loop() {
  std::string buf[2];
  pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
  int open_streams = 2;
  auto emit = [this](int which, std::string line) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (which == 0) {
      on_line_(line);
      return;
    }
    std::lock_guard lock(tail_mutex_);
    tail_.push_back(line.size() > 400 ? line.substr(0, 400) + "..." : line);
    if (tail_.size() > kTailLines) tail_.pop_front();
  };
  char chunk[65536];
  using Clock = std::chrono::steady_clock;
  constexpr auto kNever = Clock::time_point::max();
  auto exit_by = kNever;   // once stdout closed: when the process must have exited
  bool abandoned = false;  // killed for closing stdout while running
  while (open_streams > 0 || exit_by != kNever) {
    int timeout_ms = -1;
    if (exit_by != kNever && has_exited(pid_)) {
      exit_by = kNever;
    } else if (exit_by != kNever && Clock::now() >= exit_by) {
      abandoned = true;
      kill();
      exit_by = kNever;
    } else if (exit_by != kNever) {
      timeout_ms = kExitPollMs;
    }
    if (open_streams == 0 && exit_by == kNever) break;
    if (poll(fds, 2, timeout_ms) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[i].fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (!buf[i].empty()) emit(i, std::move(buf[i]));
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_streams;
        if (i == 0) exit_by = Clock::now() + kEofGrace;
        continue;
      }
      buf[i].append(chunk, static_cast<std::size_t>(n));
      std::size_t start = 0, nl;
      while ((nl = buf[i].find('\n', start)) != std::string::npos) {
        emit(i, buf[i].substr(start, nl - start));
        start = nl + 1;
      }
      buf[i].erase(0, start);
      if (buf[i].size() > kMaxLine) emit(i, std::exchange(buf[i], {}));
    }
  }
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  {
    std::lock_guard lock(exit_mutex_);
    exited_ = true;
  }
  const bool killed_here = abandoned && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  on_exit_(killed_here ? "closed its stdout (the protocol's channel) but kept running, and was killed"
                       : describe_status(status));
}

}  // namespace ktune::worker
