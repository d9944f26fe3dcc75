#pragma once
// WorkerProcess: a child process whose stdin, stdout and stderr ktune holds (POSIX). It runs in
// its own process group under a small supervisor process (worker_process.cpp says why), which
// kills the whole group when asked, when the worker ends, and when ktune dies, even by SIGKILL:
// a kill -9 of the tuner leaves nothing the worker command started holding a GPU, whatever the
// command looks like (`sh -c '...'`, ssh, srun).
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

  // Starts argv (argv[0] searched on PATH) in `folder` (empty: ktune's working folder). Stdout
  // lines go to on_line and, once both output streams have closed and the process is reaped,
  // on_exit gets how it ended; both are called on the process's reader thread. A process that
  // closes its stdout but keeps running can answer nothing more: it gets a second to exit, then
  // its group is killed. Throws RunError when the program cannot be started or the folder does
  // not exist.
  WorkerProcess(const std::vector<std::string>& argv, LineHandler on_line, ExitHandler on_exit,
                const std::string& folder = {});
  // Closes stdin, waits up to `grace_ms` for the worker to leave, then kills its process group.
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // Writes one line to the worker's stdin; false once the worker no longer reads it.
  bool send(const std::string& line);
  void kill();         // SIGKILL to the process group (by the supervisor)
  void close_input();  // EOF on the worker's stdin: a polite worker exits
  pid_t pid() const { return pid_; }
  // The last lines the worker wrote to stderr, for messages about why it died.
  std::string stderr_tail(std::size_t lines = 8) const;
  // Forgets the stderr lines so far: a new trial's failure is not explained by an earlier one's.
  void clear_stderr_tail();
  int grace_ms = 2000;

 private:
  void read_loop();
  bool read_stream(int stream, int fd, std::string& buf);
  void emit(int stream, std::string line);

  pid_t pid_ = -1;         // the worker command's process, leader of its group
  pid_t supervisor_ = -1;  // ktune's child, the worker's parent
  int in_fd_ = -1, out_fd_ = -1, err_fd_ = -1, ctl_fd_ = -1;
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
