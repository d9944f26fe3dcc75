#include "ktune/files.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>

#include "ktune/error.h"

namespace ktune {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void io_error(const std::string& what, const fs::path& file, int err) {
  throw RunError(what + " " + file.string() + ": " + std::strerror(err));
}

const char* kind_of(const fs::file_status& st) {
  switch (st.type()) {
    case fs::file_type::directory:
      return "a directory";
    case fs::file_type::character:
      return "a character device";
    case fs::file_type::block:
      return "a block device";
    case fs::file_type::fifo:
      return "a FIFO";
    case fs::file_type::socket:
      return "a socket";
    default:
      return "not a regular file";
  }
}

// Where a write to `file` lands: the end of its chain of symbolic links (which may not exist
// yet), never a link itself. Anything there that is not a regular file is refused.
fs::path write_target(const fs::path& file) {
  constexpr int kMaxLinks = 40;  // as the kernel's ELOOP limit
  fs::path target = file;
  std::error_code ec;
  for (int links = 0; fs::is_symlink(fs::symlink_status(target, ec)); ++links) {
    if (links == kMaxLinks) throw InputError(file.string() + ": too many levels of symbolic links");
    const fs::path next = fs::read_symlink(target, ec);
    if (ec) throw RunError("cannot read the link " + target.string() + ": " + ec.message());
    target = next.is_absolute() ? next : target.parent_path() / next;
  }
  const fs::file_status st = fs::status(target, ec);
  if (fs::exists(st) && !fs::is_regular_file(st))
    throw InputError(file.string() + (target == file ? "" : " (a link to " + target.string() + ")") + " is " +
                     kind_of(st) + ", not a file ktune can replace: give the path of a regular file");
  return target;
}

bool is_temp_name(const std::string& name, const std::string& prefix) {
  return name.size() == prefix.size() + 6 && name.compare(0, prefix.size(), prefix) == 0;
}

// Removes the temp files of `target` that no writer holds: those of killed writers.
void remove_stale_temps(const fs::path& dir, const std::string& prefix) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!is_temp_name(it->path().filename().string(), prefix)) continue;
    const int fd = ::open(it->path().c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) ::unlink(it->path().c_str());
    ::close(fd);
  }
}

// A new temp file beside the target, locked. remove_stale_temps of another writer may unlink it
// between mkstemp and flock; then the name no longer leads to this file, and we make another.
int create_locked_temp(std::string& tmp, const std::string& pattern, const fs::path& file) {
  for (;;) {
    tmp = pattern;
    const int fd = ::mkstemp(tmp.data());
    if (fd < 0) io_error("cannot create a temporary file beside", file, errno);
    if (::flock(fd, LOCK_EX) != 0) {
      const int err = errno;
      ::unlink(tmp.c_str());
      ::close(fd);
      io_error("cannot lock a temporary file beside", file, err);
    }
    struct stat mine {
    }, named{};
    if (::fstat(fd, &mine) == 0 && ::stat(tmp.c_str(), &named) == 0 && mine.st_ino == named.st_ino &&
        mine.st_dev == named.st_dev)
      return fd;
    ::close(fd);
  }
}

const char* kind_of_mode(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string mib_text(std::uint64_t bytes) { return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB"; }

// A size in MiB with one decimal, rounded up: a file just over the limit does not read as at it.
std::string size_text(std::uint64_t bytes) {
  const std::uint64_t tenths = (bytes * 10 + (1u << 20) - 1) >> 20;
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " MiB";
}

// `size`: none when the file turned out larger than its size said (it grew, or is a /proc file).
[[noreturn]] void too_large(const std::string& name, std::optional<std::uint64_t> size, std::uint64_t cap) {
  // Twice the file's size: room for it to grow (a registry gains entries with every apply).
  const std::uint64_t suggest = ((size ? 2 * *size : 2 * cap) + (1u << 20) - 1) >> 20;
  throw InputError("cannot read " + name + ": it " + (size ? "is " + size_text(*size) + ", over" : "holds more than") +
                   " the limit of " + mib_text(cap) + " per file (" +
                   (std::getenv(kMaxFileEnv) ? "set by " + std::string(kMaxFileEnv) : std::string("the default")) +
                   "); if it is the right file, raise the limit, e.g. " + kMaxFileEnv + "=" + std::to_string(suggest));
}

// Only regular files are read, through links: a device such as /dev/zero never ends, a FIFO
// waits for a writer, and a directory reads as empty.
void check_readable(const std::string& name, const fs::path& file, const struct stat& st, std::uint64_t cap) {
  if (!S_ISREG(st.st_mode)) {
    std::error_code ec;
    std::string link;
    if (fs::is_symlink(fs::symlink_status(file, ec))) {
      const fs::path target = fs::canonical(file, ec);
      if (!ec) link = " (a link to " + target.string() + ")";
    }
    throw InputError("cannot read " + name + link + ": it is " + kind_of_mode(st.st_mode) +
                     ", not a regular file; give the path of a file");
  }
  if (static_cast<std::uint64_t>(st.st_size) > cap) too_large(name, static_cast<std::uint64_t>(st.st_size), cap);
}

}  // namespace

void write_file_atomic(const fs::path& file, const std::string& text) {
  const fs::path target = write_target(file);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  // Appended piecewise: GCC 12 warns falsely (-Wrestrict) on "." + std::string.
  std::string prefix = ".";
  prefix += target.filename().string();
  prefix += ".tmp.";
  remove_stale_temps(dir, prefix);
  std::string tmp;
  const int fd = create_locked_temp(tmp, (dir / (prefix + "XXXXXX")).string(), file);
  // Closing the descriptor drops the lock, so it stays open until the rename is done.
  auto fail = [&](const std::string& what) {
    const int err = errno;
    ::unlink(tmp.c_str());
    ::close(fd);
    io_error(what, file, err);
  };
  // mkstemp makes the file private; keep the mode of the file it replaces, or the usual rw-r--r--.
  struct stat st {};
  const mode_t mode = ::stat(target.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0644;
  if (::fchmod(fd, mode) != 0) fail("cannot set permissions for");
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("cannot write");
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) fail("cannot sync");
  if (::rename(tmp.c_str(), target.c_str()) != 0) fail("cannot replace");
  if (::close(fd) != 0) io_error("cannot write", file, errno);
  // The rename is durable only once the folder is synced. Some file systems refuse fsync on a
  // folder (EINVAL); the file itself is complete either way, so that is not an error.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

std::uint64_t max_file_bytes() {
  const char* env = std::getenv(kMaxFileEnv);
  if (env == nullptr || *env == '\0') return kDefaultMaxFileMiB << 20;
  const std::string_view text(env);
  std::uint64_t mib = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), mib);
  // Above 2^44 MiB the byte count would not fit in 64 bits.
  if (ec != std::errc{} || end != text.data() + text.size() || mib == 0 || mib > (UINT64_MAX >> 20))
    throw InputError(std::string(kMaxFileEnv) + "='" + std::string(text.substr(0, 40)) +
                     "' is not a size: give the most MiB ktune reads of one file, a whole number >= 1 (default " +
                     std::to_string(kDefaultMaxFileMiB) + "), or unset it");
  return mib << 20;
}

std::string file_limit_help() {
  std::string now = std::to_string(kDefaultMaxFileMiB) + " MiB (the default)";
  try {
    if (const char* env = std::getenv(kMaxFileEnv); env != nullptr && *env != '\0')
      now = mib_text(max_file_bytes()) + " (set by " + kMaxFileEnv + ")";
  } catch (const InputError&) {
    now += "; " + std::string(kMaxFileEnv) + " is not a whole number of MiB";
  }
  return std::string("Files read: registries, run_metadata.json, results.json, trials.csv, search spaces,\n") +
         "kernel specs and sources, sessions and Kernel Tuner caches must be regular files (a symbolic\n" +
         "link to one is fine) of at most " + now + " each.\n" + kMaxFileEnv + "=<MiB> changes that limit (default " +
         std::to_string(kDefaultMaxFileMiB) + ").";
}

std::string read_text_file(const fs::path& file, const std::string& what) {
  const std::string name = what.empty() ? file.string() : what + " " + file.string();
  const std::uint64_t cap = max_file_bytes();
  // The type is checked before opening, so a device is never opened (opening some has effects),
  // and again on the open descriptor, in case the path was replaced in between; O_NONBLOCK keeps
  // that open from waiting for a writer should it be a FIFO by then.
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) throw InputError("cannot read " + name + ": " + std::strerror(errno));
  check_readable(name, file, st, cap);
  const int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw InputError("cannot read " + name + ": " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (::fstat(fd, &st) != 0) throw InputError("cannot read " + name + ": " + std::strerror(errno));
  check_readable(name, file, st, cap);
  // One byte more than the size, so the end is seen without growing; a file that grows while
  // read (or reports no size, as /proc's do) still stops at the limit.
  std::string text(static_cast<std::size_t>(st.st_size) + 1, '\0');
  std::size_t done = 0;
  for (;;) {
    if (done == text.size()) {
      if (done > cap) too_large(name, std::nullopt, cap);
      text.resize(static_cast<std::size_t>(std::min<std::uint64_t>(cap + 1, std::max<std::size_t>(2 * done, 1 << 16))));
    }
    const ssize_t n = ::read(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputError("cannot read " + name + ": " + std::strerror(errno));
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  if (done > cap) too_large(name, std::nullopt, cap);
  text.resize(done);
  return text;
}

}  // namespace ktune
