#pragma once
// Files ktune writes and reads whole: the registry and its backup, run metadata and results,
// exports, sessions.
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

// The whole file; InputError naming it (as "<what> <file>" when `what` is given) when it is
// missing, a directory or unreadable.
std::string read_text_file(const std::filesystem::path& file, const std::string& what = {});

}  // namespace ktune
