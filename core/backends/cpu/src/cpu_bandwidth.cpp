#include "cpu_bandwidth.h"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <new>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/compile_cache.h"
#include "ktune/error.h"
#include "ktune/files.h"
#include "ktune/json_read.h"
#include "ktune/run_store.h"

namespace ktune::cpu {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr double MiB = 1024.0 * 1024;
// No memory system ktune meets reads slower or faster than these.
constexpr double kMinPlausibleGbs = 0.1, kMaxPlausibleGbs = 100000;
constexpr const char* kCacheFile = "bandwidth.json";

// One thread's share of a pass: the sum of its slice, with four chains so the adds never wait on
// one another and the loads are all that limits the loop.
std::uint64_t read_slice(const std::uint64_t* p, std::size_t n) {
  std::uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += p[i];
    s1 += p[i + 1];
    s2 += p[i + 2];
    s3 += p[i + 3];
  }
  for (; i < n; ++i) s0 += p[i];
  return s0 + s1 + s2 + s3;
}

// Everything that changes a machine's bandwidth as ktune sees it: another CPU, another count of
// cores reading, another cache to stream past.
std::string device_key(const DeviceInfo& d) {
  return d.slug() + " cores=" + std::to_string(std::lround(d.property("cores"))) +
         " threads=" + std::to_string(std::lround(d.property("threads"))) +
         " l3=" + std::to_string(std::llround(d.property("l3_bytes")));
}

bool plausible(double gbs) { return std::isfinite(gbs) && gbs >= kMinPlausibleGbs && gbs <= kMaxPlausibleGbs; }

// The cache file's entries; empty when it is missing or does not read (it is then written anew).
json read_cache(const fs::path& file, std::string& trouble) {
  if (!fs::exists(file)) return json::object();
  try {
    json j = read_json_file(file, "CPU bandwidth cache");
    if (j.is_object()) return j;
    trouble = file.string() + " is not a JSON object";
  } catch (const InputError& e) {
    trouble = e.what();
  }
  return json::object();
}

std::string format_gbs(double gbs) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", gbs);
  return buf;
}

}  // namespace

std::size_t bandwidth_buffer_bytes(const DeviceInfo& device) {
  const double llc = device.property("l3_bytes", device.property("l2_bytes"));
  double bytes = std::clamp(4 * llc, 64 * MiB, 1024 * MiB);
  if (const double limit = device.property("max_workspace_bytes"); limit > 0) bytes = std::min(bytes, limit);
  return static_cast<std::size_t>(bytes) / 64 * 64;
}

double measure_read_bandwidth_gbs(std::size_t bytes, int threads, int passes) {
  using Clock = std::chrono::steady_clock;
  threads = std::max(1, threads);
  passes = std::max(1, passes);
  const std::size_t words = bytes / sizeof(std::uint64_t);
  std::unique_ptr<std::uint64_t[]> buffer(new (std::nothrow) std::uint64_t[words]);
  if (!buffer) throw RunError("cannot allocate " + std::to_string(bytes) + " bytes to measure the read bandwidth");
  std::uint64_t* data = buffer.get();
  // Each reader times its own slice; a pass lasts from the first start to the last end, so a
  // reader that the OS holds back (a loaded machine) lengthens the pass, never shortens it.
  std::vector<Clock::time_point> starts(static_cast<std::size_t>(threads * passes)), ends(starts.size());
  std::barrier sync(threads);
  std::atomic<std::uint64_t> sink{0};
  const auto read = [&](int t) {
    const std::size_t lo = words * t / threads, hi = words * (t + 1) / threads;
    for (std::size_t i = lo; i < hi; ++i) data[i] = i;  // first touch: the page lands near its reader
    std::uint64_t sum = 0;
    for (int p = 0; p < passes; ++p) {
      sync.arrive_and_wait();
      const std::size_t at = static_cast<std::size_t>(p * threads + t);
      starts[at] = Clock::now();
      sum += read_slice(data + lo, hi - lo);
      ends[at] = Clock::now();
    }
    sink += sum;  // the sums are used: no compiler may drop the reads
  };
  std::vector<std::thread> helpers;
  for (int t = 1; t < threads; ++t) helpers.emplace_back(read, t);
  read(0);
  for (auto& h : helpers) h.join();
  double best = 0;
  for (int p = 0; p < passes; ++p) {
    const auto first = starts.begin() + p * threads, last = ends.begin() + p * threads;
    const double s = std::chrono::duration<double>(*std::max_element(last, last + threads) -
                                                   *std::min_element(first, first + threads))
                         .count();
    if (s > 0) best = std::max(best, static_cast<double>(words * sizeof(std::uint64_t)) / s / 1e9);
  }
  return best;
}

Bandwidth cached_read_bandwidth(const DeviceInfo& device, const fs::path& dir, const std::function<double()>& probe) {
  const fs::path file = dir / kCacheFile;
  const std::string key = device_key(device);
  std::string trouble;
  json cache = read_cache(file, trouble);
  if (const auto it = cache.find(key); it != cache.end()) {
    const json& entry = *it;
    const double gbs = entry.is_object() && entry.contains("read_gbs") && entry["read_gbs"].is_number()
                           ? entry["read_gbs"].get<double>()
                           : 0;
    const bool dated = entry.is_object() && entry.contains("measured_at") && entry["measured_at"].is_string();
    if (plausible(gbs))
      return {gbs, "measured " + (dated ? entry["measured_at"].get<std::string>() : std::string("earlier")) +
                       ", kept in " + file.string()};
    trouble = file.string() + ": \"" + key + "\" holds no plausible read_gbs";
  }
  const double gbs = probe();
  if (!plausible(gbs)) return {0, "the measurement gave " + format_gbs(gbs) + " GB/s, which no memory reads at"};
  Bandwidth out{
      gbs, "measured now (" + std::string(trouble.empty() ? "" : trouble + "; ") + "kept in " + file.string() + ")"};
  cache[key] = {{"read_gbs", gbs}, {"measured_at", now_iso8601()}};
  try {
    fs::create_directories(dir);
    write_file_atomic(file, cache.dump(2) + "\n");
  } catch (const std::exception& e) {
    out.source = "measured now, not kept: " + std::string(e.what());
  }
  return out;
}

Bandwidth host_read_bandwidth(const DeviceInfo& host) {
  const int cores = static_cast<int>(std::max(1.0, host.property("cores", 1)));
  try {
    return cached_read_bandwidth(host, default_compile_cache_dir("cpu", "KTUNE_CPU_CACHE"),
                                 [&] { return measure_read_bandwidth_gbs(bandwidth_buffer_bytes(host), cores, 5); });
  } catch (const std::exception& e) {
    return {0, std::string("not measured: ") + e.what()};
  }
}

}  // namespace ktune::cpu
