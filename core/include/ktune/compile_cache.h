#pragma once
// What a GPU backend's compiler reads and produces for one config, and the disk cache both GPU
// backends share: an entry is named by a hash of everything that changes the binary (source and
// headers, options, entry points, target, compiler version), so a stale entry is never found,
// only orphaned.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace ktune {

// One module's program text: the source, the file name its messages give, and the headers it
// includes by a quoted name ("ktune_device.cuh" -> text). Headers travel with the source instead
// of being found on an include path, so everything the compiler reads is in the cache key.
struct KernelSource {
  std::string text;
  std::string file;
  std::map<std::string, std::string> headers;
};

struct CompiledModule {
  std::string binary;                // cubin (CUDA), code object (HIP)
  std::vector<std::string> lowered;  // names of the requested entry points, same order
  std::string log;                   // compiler warnings (empty from the cache)
  bool from_cache = false;
  double seconds = 0;  // compile time, or cache read time
};

// Hex digest naming a cache entry; changes with any input, a header's name or text included
// (the source's file name is not: it changes messages, not the binary).
std::string compile_cache_key(const KernelSource& source, const std::vector<std::string>& options,
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
