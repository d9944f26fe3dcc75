#include "ktune/files.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

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

std::string read_text_file(const fs::path& file, const std::string& what) {
  const std::string name = what.empty() ? file.string() : what + " " + file.string();
  // A directory opens as a stream and reads as empty: say what it is instead of "not valid JSON".
  std::error_code ec;
  if (fs::is_directory(file, ec)) throw InputError("cannot read " + name + ": it is a directory; give a file");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError("cannot read " + name + ": " + std::strerror(errno));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw InputError("cannot read " + name + ": " + std::strerror(errno));
  return text;
}

}  // namespace ktune
