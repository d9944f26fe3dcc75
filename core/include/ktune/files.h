#pragma once
// Files ktune writes and reads whole: the registry and its backup, run metadata and results,
// exports, sessions.
#include <cstdint>
#include <filesystem>
#include <string>

namespace ktune {

// Writes `text` to `file` atomically: temp file beside it, fsync, rename, fsync of the folder.
// The temp file is hidden (".<name>.tmp.XXXXXX") and locked (flock) by its writer until renamed,
// so a kill never leaves one that could be taken for the file, and the next write removes those
// no live writer holds. Through a symbolic link the link's target is written and the link stays
// a link. A directory, device node, FIFO or socket at `file` is an InputError: it is not a file
// to replace. Throws RunError naming `file` when the disk refuses.
void write_file_atomic(const std::filesystem::path& file, const std::string& text);

// How much ktune reads of one file: every file it reads whole (registries, run metadata and
// results, trials.csv, search spaces, kernel specs and sources, sessions, Kernel Tuner caches)
// is refused above it, before any of it is read. The default leaves room for the largest files
// real runs make (a registry of 100,000 entries is ~100 MiB, a Kernel Tuner cache a few hundred
// MiB, trials.csv of a million trials 0.3 to 1 GiB by the samples each keeps) while a file given
// by mistake (a disk image, a data set) is named instead of filling the machine's memory (a
// parsed JSON file takes several times its size). $KTUNE_MAX_FILE_MB raises or lowers it.
inline constexpr const char* kMaxFileEnv = "KTUNE_MAX_FILE_MB";
inline constexpr std::uint64_t kDefaultMaxFileMiB = 2048;
// The limit in bytes; InputError naming $KTUNE_MAX_FILE_MB when it is not a whole number of MiB >= 1.
std::uint64_t max_file_bytes();
// A paragraph for --help and the docs: the limit, what it applies to and how to change it.
std::string file_limit_help();

// The whole file; InputError naming it (as "<what> <file>" when `what` is given) when it is
// missing, unreadable, larger than max_file_bytes(), or not a regular file once symbolic links
// are followed (a directory, device, FIFO or socket: /dev/zero would be read until memory runs
// out, a FIFO would block). Opening never blocks and never reads a device.
std::string read_text_file(const std::filesystem::path& file, const std::string& what = {});

}  // namespace ktune
