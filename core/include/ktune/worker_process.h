#pragma once
// WorkerProcess: a child process whose stdin, stdout and stderr ktune holds (POSIX). It runs in
// its own process group, so killing it kills what it started too, and on Linux it is killed when
// ktune dies (PR_SET_PDEATHSIG), so a kill -9 of the tuner leaves no orphan holding a GPU.
#include <sys/types.h>

#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ktune::worker {

class WorkerProcess {
 public:
  using LineHandler = std::function<void(const std::string& line)>;
  using ExitHandler = std::function<void(const std::string& how)>;  // "exited with code 3", "killed by SIGSEGV"

  // Starts argv (argv[0] searched on PATH). Stdout lines go to on_line and, once both output
  // streams have closed and the process is reaped, on_exit gets how it ended; both are called on
  // the process's reader thread. A process that closes its stdout but keeps running can answer
  // nothing more: it gets a second to exit, then its group is killed. Throws RunError when the
  // program cannot be started.
  WorkerProcess(const std::vector<std::string>& argv, LineHandler on_line, ExitHandler on_exit);
  // Closes stdin, waits up to `grace_ms` for the worker to leave, then kills its process group.
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // Writes one line to the worker's stdin; false once the worker no longer reads it.
  bool send(const std::string& line);
  void kill();         // SIGKILL to the process group
  void close_input();  // EOF on the worker's stdin: a polite worker exits
  pid_t pid() const { return pid_; }
  // The last lines the worker wrote to stderr, for messages about why it died.
  std::string stderr_tail(std::size_t lines = 8) const;
  int grace_ms = 2000;

 private:
  void read_loop();

  pid_t pid_ = -1;
  int in_fd_ = -1, out_fd_ = -1, err_fd_ = -1;
  std::mutex send_mutex_;
  mutable std::mutex tail_mutex_;
  std::deque<std::string> tail_;
  LineHandler on_line_;
  ExitHandler on_exit_;
  std::mutex exit_mutex_;
  bool exited_ = false;
  std::thread reader_;
};

// "SIGSEGV (Segmentation fault)" for 11.
std::string signal_name(int sig);

}  // namespace ktune::worker
