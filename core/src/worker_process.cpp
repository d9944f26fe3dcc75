#include "ktune/worker_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <utility>

#include "ktune/error.h"

// Why a supervisor. ktune is killed with SIGKILL too (a user's kill -9, the OOM killer, a cluster
// job's end), so nothing ktune runs at its death can end the worker; the kernel must tell someone.
// PR_SET_PDEATHSIG reaches only a direct child, and a worker command is often a wrapper (`sh -c`,
// ssh, srun) whose own child is the process holding the GPU: that one would survive, hung in its
// kernel and never reading the stdin that told it ktune was gone. So each worker gets a small
// supervisor, a fork of ktune that runs no ktune code: it puts the worker command in a process
// group of its own and holds one end of a socket whose other end only ktune holds. When ktune dies
// the kernel closes ktune's end, the supervisor reads EOF and SIGKILLs the worker's whole group,
// whatever the command looks like. The supervisor is the worker's parent, so the worker's pid (and
// with it the group id) stays reserved until the supervisor reaps it: a group kill never reaches
// an unrelated group that reused the id. ktune asks for a kill through the same socket (one byte)
// and learns the worker's wait status from it, so the supervisor is the only one who signals.

namespace ktune::worker {

namespace {

constexpr std::size_t kTailLines = 40;
constexpr std::size_t kMaxLine = 64 << 20;  // a runaway line is cut here, and then fails to parse
// A worker whose stdout closed has this long to exit by itself (so that its own exit status is
// what is reported) before it is killed: it can answer nothing more.
constexpr auto kEofGrace = std::chrono::milliseconds(1000);
// Once the worker has ended (its group killed), its output is read until it closes, at most this
// long: a process that left the group (setsid) may hold it open forever.
constexpr auto kDrainGrace = std::chrono::milliseconds(1000);
constexpr int kExecFailed = 127;
constexpr int kMaxClosedFd = 1 << 16;  // without close_range, descriptors above this are left open

volatile sig_atomic_t g_stop_requested = 0;  // in the supervisor: SIGTERM

extern "C" void on_stop_signal(int) { g_stop_requested = 1; }
extern "C" void on_child_signal(int) {}  // only to interrupt ppoll

bool write_all(int fd, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k, n -= static_cast<std::size_t>(k);
  }
  return true;
}

bool read_all(int fd, void* data, std::size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t k = ::read(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k, n -= static_cast<std::size_t>(k);
  }
  return true;
}

// Every descriptor from `first` up: the supervisor must not keep ktune's ends of other workers'
// pipes open (those workers would never see their stdin close).
void close_from(int first, int limit) {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, static_cast<unsigned>(first), ~0U, 0U) == 0) return;
#endif
  for (int fd = first; fd < limit; ++fd) ::close(fd);
}

// In the worker (a child of the supervisor): only async-signal-safe calls until exec. `folder`:
// where it starts, null for ktune's own.
[[noreturn]] void exec_worker(char* const* args, pid_t supervisor, const char* folder) {
  setpgid(0, 0);
#ifdef __linux__
  // A backstop for a supervisor that is itself SIGKILLed: the worker (not what it started) dies with it.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != supervisor) _exit(kExecFailed);
#else
  (void)supervisor;
#endif
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  signal(SIGPIPE, SIG_DFL);
  if (folder && chdir(folder) != 0) {
    const char msg[] = "ktune: cannot enter the worker's folder (it was removed or made unreadable just now)\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(kExecFailed);
  }
  execvp(args[0], args);
  const char msg[] = "ktune: cannot execute the worker command\n";
  (void)!write(2, msg, sizeof msg - 1);
  _exit(kExecFailed);
}

// Waits until the worker ends, killing its group when ktune's end of the channel (fd 3) has a byte
// or closes, or on SIGTERM. Returns with the worker a zombie, its pid (the group id) still reserved.
void watch(pid_t worker) {
  sigset_t during_wait;
  sigemptyset(&during_wait);
  bool killed = false;
  while (true) {
    siginfo_t info{};
    if (waitid(P_PID, static_cast<id_t>(worker), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == worker)
      return;
    if (g_stop_requested && !killed) {
      ::kill(-worker, SIGKILL);
      killed = true;
    }
    pollfd channel{3, POLLIN, 0};
    // Once killed, only SIGCHLD is awaited: a closed channel would make ppoll return at once.
    if (ppoll(&channel, killed ? 0 : 1, nullptr, &during_wait) > 0 && !killed) {
      char request;
      const ssize_t n = ::read(3, &request, 1);
      if (n >= 0 || (errno != EINTR && errno != EAGAIN)) {  // a request (one byte) or ktune is gone (EOF)
        ::kill(-worker, SIGKILL);
        killed = true;
      }
    }
  }
}

// The supervisor: a fork of ktune, which has threads, so only async-signal-safe calls. `fds` are
// the worker's stdin, stdout, stderr and the supervisor's end of the channel.
[[noreturn]] void supervise(const int (&fds)[4], char* const* args, const char* folder, int fd_limit) {
  setpgid(0, 0);  // a Ctrl-C for ktune's group is ktune's to handle; the channel says when to stop
#ifdef __linux__
  prctl(PR_SET_NAME, "ktune-supervise");  // in ps and top: not a second tuner
#endif
  int moved[4];
  for (int i = 0; i < 4; ++i)
    if ((moved[i] = fcntl(fds[i], F_DUPFD, 10)) < 0) _exit(kExecFailed);  // above 0-3, whatever they were
  for (int i = 0; i < 4; ++i) dup2(moved[i], i);
  close_from(4, fd_limit);
  fcntl(3, F_SETFD, FD_CLOEXEC);
  sigset_t watched;
  sigemptyset(&watched);
  sigaddset(&watched, SIGCHLD);
  sigaddset(&watched, SIGTERM);
  sigprocmask(SIG_BLOCK, &watched, nullptr);  // delivered only inside ppoll: no wake-up is missed
  struct sigaction action {};
  action.sa_handler = on_child_signal;
  sigaction(SIGCHLD, &action, nullptr);
  action.sa_handler = on_stop_signal;
  sigaction(SIGTERM, &action, nullptr);
  const pid_t self = getpid();
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  const pid_t worker = _Fork();  // async-signal-safe: no atfork handlers of ktune's libraries run here
#else
  const pid_t worker = fork();
#endif
  if (worker == 0) exec_worker(args, self, folder);
  const std::int32_t started = worker > 0 ? worker : -errno;
  if (worker > 0) setpgid(worker, worker);  // also from here, so a kill at once reaches its group
  write_all(3, &started, sizeof started);
  if (worker < 0) _exit(kExecFailed);
  for (int fd = 0; fd < 3; ++fd) ::close(fd);  // the worker's streams close when its group closes them
  watch(worker);
  ::kill(-worker, SIGKILL);  // what the worker left running in its group goes with it
  int status = 0;
  while (waitpid(worker, &status, 0) < 0 && errno == EINTR) {
  }
  const std::int32_t reported = status;
  write_all(3, &reported, sizeof reported);
  _exit(0);
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "was killed by " + signal_name(WTERMSIG(status));
  return "ended with wait status " + std::to_string(status);
}

int open_fd_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return kMaxClosedFd;
  return static_cast<int>(std::min<rlim_t>(limit.rlim_cur, kMaxClosedFd));
}

void close_all(std::initializer_list<int> fds) {
  for (const int fd : fds)
    if (fd >= 0) ::close(fd);
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

WorkerProcess::WorkerProcess(const std::vector<std::string>& argv, LineHandler on_line, ExitHandler on_exit,
                             const std::string& folder)
    : on_line_(std::move(on_line)), on_exit_(std::move(on_exit)) {
  if (argv.empty()) throw RunError("empty worker command");
  // Checked here, where the message can name it: in the child only a fixed text can be written.
  std::error_code ec;
  if (!folder.empty() && !std::filesystem::is_directory(folder, ec))
    throw RunError("the folder it is to start in, " + folder +
                   ", does not exist: start it from a folder that exists, or give its paths absolute");
  // stdin and the channel are sockets so that writing to a dead peer is an error (MSG_NOSIGNAL), not SIGPIPE.
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, ctl[2] = {-1, -1};
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0 || pipe2(out, O_CLOEXEC) != 0 ||
      pipe2(err, O_CLOEXEC) != 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl) != 0) {
    const int e = errno;
    close_all({in[0], in[1], out[0], out[1], err[0], err[1], ctl[0], ctl[1]});
    throw RunError(std::string("cannot make the worker's pipes: ") + strerror(e));
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int fd_limit = open_fd_limit();
  const int child_fds[4] = {in[1], out[1], err[1], ctl[1]};
  supervisor_ = fork();
  if (supervisor_ == 0) supervise(child_fds, args.data(), folder.empty() ? nullptr : folder.c_str(), fd_limit);
  const int fork_errno = errno;
  close_all({in[1], out[1], err[1], ctl[1]});
  in_fd_ = in[0], out_fd_ = out[0], err_fd_ = err[0], ctl_fd_ = ctl[0];
  std::int32_t started = -fork_errno;
  if (supervisor_ > 0 && !read_all(ctl_fd_, &started, sizeof started)) started = -ECHILD;
  if (started <= 0) {
    if (supervisor_ > 0)
      while (waitpid(supervisor_, nullptr, 0) < 0 && errno == EINTR) {
      }
    close_all({in_fd_, out_fd_, err_fd_, ctl_fd_});
    throw RunError("cannot start worker '" + argv[0] + "': " + strerror(-started));
  }
  pid_ = started;
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
  close_all({in_fd_, ctl_fd_});
}

bool WorkerProcess::send(const std::string& line) {
  std::lock_guard lock(send_mutex_);
  return write_all(in_fd_, line.data(), line.size());
}

void WorkerProcess::kill() {
  std::lock_guard lock(exit_mutex_);
  const char request = 'k';
  if (!exited_) write_all(ctl_fd_, &request, 1);
}

void WorkerProcess::close_input() { ::shutdown(in_fd_, SHUT_WR); }

std::string WorkerProcess::stderr_tail(std::size_t lines) const {
  std::lock_guard lock(tail_mutex_);
  std::string out;
  const std::size_t from = tail_.size() > lines ? tail_.size() - lines : 0;
  for (std::size_t i = from; i < tail_.size(); ++i) out += (out.empty() ? "" : "\n") + tail_[i];
  return out;
}

void WorkerProcess::clear_stderr_tail() {
  std::lock_guard lock(tail_mutex_);
  tail_.clear();
}

void WorkerProcess::emit(int stream, std::string line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (stream == 0) {
    on_line_(line);
    return;
  }
  if (line.find_first_not_of(" \t") == std::string::npos) return;  // blank lines say nothing in a message
  std::lock_guard lock(tail_mutex_);
  tail_.push_back(line.size() > 400 ? line.substr(0, 400) + "..." : line);
  if (tail_.size() > kTailLines) tail_.pop_front();
}

// Reads one chunk of stdout (0) or stderr (1) into whole lines; false at its end.
bool WorkerProcess::read_stream(int stream, int fd, std::string& buf) {
  char chunk[65536];
  const ssize_t n = ::read(fd, chunk, sizeof chunk);
  if (n < 0 && errno == EINTR) return true;
  if (n <= 0) {
    if (!buf.empty()) emit(stream, std::exchange(buf, {}));
    return false;
  }
  buf.append(chunk, static_cast<std::size_t>(n));
  std::size_t start = 0, nl;
  while ((nl = buf.find('\n', start)) != std::string::npos) {
    emit(stream, buf.substr(start, nl - start));
    start = nl + 1;
  }
  buf.erase(0, start);
  if (buf.size() > kMaxLine) emit(stream, std::exchange(buf, {}));
  return true;
}

void WorkerProcess::read_loop() {
  using Clock = std::chrono::steady_clock;
  constexpr auto kNever = Clock::time_point::max();
  std::string buf[2];
  pollfd fds[3] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}, {ctl_fd_, POLLIN, 0}};
  int open_streams = 2;
  std::int32_t status = 0;
  std::size_t status_bytes = 0;  // of the worker's wait status, which the supervisor sends when it ended
  bool ended = false;            // the status came, or the supervisor is gone
  auto exit_by = kNever;         // once stdout closed: when the process must have exited
  auto drain_by = kNever;        // once it ended: how long its streams are still read
  bool abandoned = false;        // killed for closing stdout while running
  while (open_streams > 0 || !ended) {
    const auto now = Clock::now();
    int timeout_ms = -1;
    if (ended) {
      if (drain_by == kNever) drain_by = now + kDrainGrace;
      if (now >= drain_by) break;
      timeout_ms = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(drain_by - now).count());
    } else if (exit_by != kNever && now >= exit_by) {
      abandoned = true;
      kill();
      exit_by = kNever;
    } else if (exit_by != kNever) {
      timeout_ms = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(exit_by - now).count());
    }
    if (poll(fds, 3, timeout_ms) < 0 && errno != EINTR) break;
    // stderr before stdout: what a worker wrote to stderr before its answer is then in the tail
    // before the answer ends the trial, and never explains the next trial's failure.
    for (const int i : {1, 0}) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      if (read_stream(i, fds[i].fd, buf[i])) continue;
      ::close(fds[i].fd);
      fds[i].fd = -1;
      --open_streams;
      if (i == 0 && !ended) exit_by = Clock::now() + kEofGrace;
    }
    if (fds[2].fd >= 0 && (fds[2].revents & (POLLIN | POLLHUP | POLLERR))) {
      const ssize_t n = ::read(ctl_fd_, reinterpret_cast<char*>(&status) + status_bytes, sizeof status - status_bytes);
      if (n > 0) status_bytes += static_cast<std::size_t>(n);
      if (status_bytes == sizeof status || n == 0 || (n < 0 && errno != EINTR)) ended = true, fds[2].fd = -1;
    }
  }
  for (int i = 0; i < 2; ++i)
    if (fds[i].fd >= 0) ::close(fds[i].fd);
  int supervisor_status = 0;
  while (waitpid(supervisor_, &supervisor_status, 0) < 0 && errno == EINTR) {
  }
  {
    std::lock_guard lock(exit_mutex_);
    exited_ = true;
  }
  if (status_bytes != sizeof status) {
    on_exit_("ended unseen: its supervisor process (ktune's, which reports how it ended) " +
             describe_status(supervisor_status));
    return;
  }
  const bool killed_here = abandoned && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  on_exit_(killed_here ? "closed its stdout (the protocol's channel) but kept running, and was killed"
                       : describe_status(status));
}

}  // namespace ktune::worker
