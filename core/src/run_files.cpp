// Run folders and their files: run names, UTC times, and folder locks.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>

#include "ktune/error.h"
#include "ktune/run_store.h"

namespace ktune {

namespace fs = std::filesystem;

namespace {

std::string format_utc(const char* format) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  return std::string(buf, std::strftime(buf, sizeof buf, format, &tm));
}

[[noreturn]] void io_error(const std::string& what, const fs::path& file, int err) {
  throw RunError(what + " " + file.string() + ": " + std::strerror(err));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Files

std::string now_iso8601() { return format_utc("%Y-%m-%dT%H:%M:%SZ"); }

std::string default_run_name(const std::string& family) { return family + "_" + format_utc("%Y%m%d_%H%M%S"); }

namespace {

// The longest file name the file system under `dir` takes (NAME_MAX where it does not say).
std::size_t name_max(fs::path dir) {
  std::error_code ec;
  dir = fs::absolute(dir, ec);
  while (!ec && !fs::exists(dir, ec) && dir.has_relative_path()) dir = dir.parent_path();
  const long max = ::pathconf(dir.c_str(), _PC_NAME_MAX);
  return max > 0 ? static_cast<std::size_t>(max) : NAME_MAX;
}

}  // namespace

fs::path run_folder(const fs::path& output_dir, const std::string& name) {
  const std::string what = "run name '" + name + "'";
  if (name.empty()) throw InputError("the run name is empty: give a folder name such as gemm_m16");
  if (name == "." || name == "..")
    throw InputError(what + " names a folder, not a run: give a folder name such as gemm_m16");
  if (name.find('/') != std::string::npos)
    throw InputError(what + " is a path: give one folder name without '/' (the folder goes under --output-dir " +
                     output_dir.string() + ")");
  if (const std::size_t max = name_max(output_dir); name.size() > max)
    throw InputError("run name of " + std::to_string(name.size()) + " bytes is longer than the " + std::to_string(max) +
                     " the file system under " + output_dir.string() + " allows: give a shorter one");
  return output_dir / name;
}

namespace {

int open_lock_file(const fs::path& file) {
  std::error_code ec;
  if (file.has_parent_path()) fs::create_directories(file.parent_path(), ec);
  if (ec) throw RunError("cannot create " + file.parent_path().string() + ": " + ec.message());
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) io_error("cannot open lock file", file, errno);
  return fd;
}

// flock(fd, op), retried on EINTR; false when a non-blocking request finds the lock taken.
bool lock_fd(int fd, int op, const fs::path& file) {
  while (::flock(fd, op) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    if (err == EWOULDBLOCK) return false;
    ::close(fd);
    io_error("cannot lock", file, err);
  }
  return true;
}

}  // namespace

FileLock FileLock::acquire(const fs::path& file) {
  const int fd = open_lock_file(file);
  lock_fd(fd, LOCK_EX, file);
  return FileLock(fd);
}

std::optional<FileLock> FileLock::try_acquire(const fs::path& file) {
  const int fd = open_lock_file(file);
  if (lock_fd(fd, LOCK_EX | LOCK_NB, file)) return FileLock(fd);
  ::close(fd);
  return std::nullopt;
}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace ktune
