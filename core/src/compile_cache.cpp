#include "ktune/compile_cache.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "ktune/error.h"
#include "ktune/files.h"
#include "ktune/kernel_spec.h"

namespace ktune {

namespace {

std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

std::string compile_cache_key(const KernelSource& source, const std::vector<std::string>& options,
                              const std::vector<std::string>& entries, const std::string& target,
                              const std::string& compiler_version) {
  // Length-prefixed fields: ("ab","c") and ("a","bc") must not collide.
  std::string text;
  auto add = [&](const std::string& s) { text += std::to_string(s.size()) + ":" + s + ";"; };
  add(target);
  add(compiler_version);
  add(source.text);
  add(std::to_string(source.headers.size()));
  for (const auto& [name, header] : source.headers) {
    add(name);
    add(header);
  }
  add(std::to_string(options.size()));
  for (const auto& o : options) add(o);
  add(std::to_string(entries.size()));
  for (const auto& e : entries) add(e);
  // Two independent 64-bit hashes: a 128-bit name makes accidental collisions negligible.
  return hex64(fnv1a64(text)) + hex64(fnv1a64(text, 0x84222325cbf29ce4ULL));
}

bool read_compile_cache(const std::filesystem::path& file, const std::string& magic, std::size_t entries,
                        CompiledModule& out) {
  // Through read_text_file: a cache entry that is no regular file (a FIFO, a link to a device)
  // is a miss, never a read that blocks or does not end.
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return false;
  std::istringstream in;
  try {
    in.str(read_text_file(file));
  } catch (const InputError&) {
    return false;
  }
  std::string line;
  if (!std::getline(in, line) || line != magic) return false;
  std::vector<std::string> lowered;
  while (std::getline(in, line) && !line.empty()) lowered.push_back(line);
  if (lowered.size() != entries) return false;
  std::ostringstream os;
  os << in.rdbuf();
  if (os.str().empty()) return false;
  out.binary = os.str();
  out.lowered = std::move(lowered);
  return true;
}

void write_compile_cache(const std::filesystem::path& file, const std::string& magic, const CompiledModule& m) {
  static std::atomic<unsigned> counter{0};
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  const auto tmp = file.string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) return;
    out << magic << '\n';
    for (const auto& l : m.lowered) out << l << '\n';
    out << '\n';
    out.write(m.binary.data(), static_cast<std::streamsize>(m.binary.size()));
    if (!out) {
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

std::filesystem::path default_compile_cache_dir(const std::string& backend, const char* env_var) {
  if (const char* env = std::getenv(env_var); env && *env) return env;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::filesystem::path(xdg) / "ktune" / backend;
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::filesystem::path(home) / ".cache" / "ktune" / backend;
  return std::filesystem::temp_directory_path() / ("ktune-" + backend + "-cache");
}

}  // namespace ktune
