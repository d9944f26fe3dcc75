#pragma once
// What a GPU backend's compiler produces for one config, and the disk cache both GPU backends
// share: an entry is named by a hash of everything that changes the binary (source, options,
// entry points, target, compiler version), so a stale entry is never found, only orphaned.
#include <filesystem>
#include <string>
#include <vector>

namespace ktune {

struct CompiledModule {
  std::string binary;                // cubin (CUDA), code object (HIP)
  std::vector<std::string> lowered;  // names of the requested entry points, same order
  std::string log;                   // compiler warnings (empty from the cache)
  bool from_cache = false;
  double seconds = 0;  // compile time, or cache read time
};

// Hex digest naming a cache entry; changes with any input.
std::string compile_cache_key(const std::string& source, const std::vector<std::string>& options,
                              const std::vector<std::string>& entries, const std::string& target,
                              const std::string& compiler_version);

// Cache file: `magic` line, one line per lowered entry name, a blank line, then the binary.
// False when the file is missing, of another format or for another number of entries.
bool read_compile_cache(const std::filesystem::path& file, const std::string& magic, std::size_t entries,
                        CompiledModule& out);
// Atomic (temporary file, then rename): concurrent compiles of one config never leave a torn
// file. A cache that cannot be written costs time, not correctness: failures are ignored.
void write_compile_cache(const std::filesystem::path& file, const std::string& magic, const CompiledModule& m);

// $<env_var>, else $XDG_CACHE_HOME/ktune/<backend>, else ~/.cache/ktune/<backend>.
std::filesystem::path default_compile_cache_dir(const std::string& backend, const char* env_var);

}  // namespace ktune
