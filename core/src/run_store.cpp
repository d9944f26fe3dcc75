#include "ktune/run_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>
#include <map>
#include <set>

#include "json_path.h"
#include "ktune/csv.h"
#include "ktune/error.h"
#include "ktune/registry.h"
#include "ktune/tuner.h"
#include "ktune/version.h"

namespace ktune {

namespace fs = std::filesystem;
using detail::JsonPath;
using nlohmann::json;

namespace {

constexpr const char* kMetadataFile = "run_metadata.json";
constexpr const char* kTrialsFile = "trials.csv";
constexpr const char* kResultsFile = "results.json";
constexpr const char* kLockFile = ".ktune.lock";
constexpr int kRunFormat = 1;

// trials.csv: these columns, with one column per space parameter between them.
const std::vector<std::string> kLeadColumns = {"id", "problem", "status"};
const std::vector<std::string> kTailColumns = {
    "median_ns", "mean_ns", "std_ns",        "min_ns",           "max_ns",       "count", "compile_time_s",
    "tflops",    "gbps",    "max_abs_error", "mismatch_fraction", "started_at_s", "error", "samples_ns"};
// Derived columns export_trials_csv adds for other tools.
const std::vector<std::string> kExportColumns = {"config", "rel_error", "vs_best"};

std::vector<std::string> trial_header(const std::vector<std::string>& params) {
  std::vector<std::string> h = kLeadColumns;
  h.insert(h.end(), params.begin(), params.end());
  h.insert(h.end(), kTailColumns.begin(), kTailColumns.end());
  return h;
}

std::vector<std::string> param_names(const SearchSpace& space) {
  std::vector<std::string> names;
  for (const auto& p : space.parameters()) names.push_back(p.name);
  return names;
}

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    out += items[i];
  }
  return out;
}

// Shortest text that reads back as the same double, so samples survive a round trip bit-exactly.
std::string format_double(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

double parse_double(const std::string& text, const std::string& column) {
  double v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || r.ec != std::errc{} || r.ptr != text.data() + text.size())
    throw InputError("column " + column + ": '" + text + "' is not a number");
  return v;
}

std::int64_t parse_int(const std::string& text, const std::string& column) {
  std::int64_t v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || r.ec != std::errc{} || r.ptr != text.data() + text.size())
    throw InputError("column " + column + ": '" + text + "' is not an integer");
  return v;
}

std::string format_samples(const std::vector<double>& samples) {
  std::string out;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (i) out += ';';
    out += format_double(samples[i]);
  }
  return out;
}

std::vector<double> parse_samples(const std::string& text) {
  std::vector<double> out;
  if (text.empty()) return out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = text.find(';', start);
    out.push_back(parse_double(text.substr(start, end - start), "samples_ns"));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

std::vector<std::string> trial_row(const Trial& t, const std::vector<std::string>& params) {
  if (t.config.values().size() != params.size())
    throw InputError("trial " + std::to_string(t.id) + " has config " + t.config.key() + " but the run's space has " +
                     std::to_string(params.size()) + " parameters (" + join(params, ", ") + ")");
  std::vector<std::string> row = {std::to_string(t.id), t.problem_key, to_string(t.status)};
  for (const auto& name : params) row.push_back(std::to_string(t.config.get(name)));
  const Stats& s = t.stats;
  for (double v : {s.median_ns, s.mean_ns, s.std_ns, s.min_ns, s.max_ns}) row.push_back(format_double(v));
  row.push_back(std::to_string(s.count));
  for (double v : {t.compile_time_s, t.tflops, t.gbps, t.max_abs_error, t.mismatch_fraction, t.started_at_s})
    row.push_back(format_double(v));
  row.push_back(t.error);
  row.push_back(format_samples(t.samples_ns));
  return row;
}

// `fields` follows trial_header(params). Errors name the column; the caller adds file and line.
Trial parse_trial(const std::vector<std::string>& fields, const std::vector<std::string>& params) {
  const std::size_t expected = kLeadColumns.size() + params.size() + kTailColumns.size();
  if (fields.size() != expected)
    throw InputError("expected " + std::to_string(expected) + " fields, found " + std::to_string(fields.size()));
  const std::size_t tail = kLeadColumns.size() + params.size();
  // The tail columns by name, so the code reads like the header.
  auto cell = [&](const std::string& column) -> const std::string& {
    const auto it = std::find(kTailColumns.begin(), kTailColumns.end(), column);
    return fields[tail + static_cast<std::size_t>(it - kTailColumns.begin())];
  };
  auto number = [&](const std::string& column) { return parse_double(cell(column), column); };
  Trial t;
  t.id = parse_int(fields[0], "id");
  t.problem_key = fields[1];
  if (t.problem_key.empty()) throw InputError("column problem is empty");
  t.status = trial_status_from_string(fields[2]);
  for (std::size_t p = 0; p < params.size(); ++p) t.config.set(params[p], parse_int(fields[kLeadColumns.size() + p], params[p]));
  t.stats.median_ns = number("median_ns");
  t.stats.mean_ns = number("mean_ns");
  t.stats.std_ns = number("std_ns");
  t.stats.min_ns = number("min_ns");
  t.stats.max_ns = number("max_ns");
  const std::int64_t count = parse_int(cell("count"), "count");
  if (count < 0) throw InputError("column count: must not be negative");
  t.stats.count = static_cast<std::size_t>(count);
  t.compile_time_s = number("compile_time_s");
  t.tflops = number("tflops");
  t.gbps = number("gbps");
  t.max_abs_error = number("max_abs_error");
  t.mismatch_fraction = number("mismatch_fraction");
  t.started_at_s = number("started_at_s");
  t.error = cell("error");
  t.samples_ns = parse_samples(cell("samples_ns"));
  return t;
}

struct TrialsFile {
  std::vector<std::string> params;
  std::vector<csv::Record> rows;  // complete rows only
  std::optional<std::size_t> torn_offset;  // where a torn last row starts
};

// Reads and checks trials.csv's header; returns its parameter columns and its complete rows.
TrialsFile read_trials_file(const fs::path& file) {
  const std::string text = read_text_file(file);
  std::vector<csv::Record> records = csv::parse(text, file.string());
  if (records.empty() || !records.front().complete)
    throw InputError(file.string() + ": no header line; the run folder is damaged, start a new run");
  const auto& header = records.front().fields;
  const std::size_t fixed = kLeadColumns.size() + kTailColumns.size();
  if (header.size() < fixed || !std::equal(kLeadColumns.begin(), kLeadColumns.end(), header.begin()) ||
      !std::equal(kTailColumns.begin(), kTailColumns.end(), header.end() - static_cast<long>(kTailColumns.size())))
    throw InputError(file.string() + ":1: not a ktune trials header; expected " +
                     join(trial_header({"<parameters>"}), ","));
  TrialsFile out;
  out.params.assign(header.begin() + static_cast<long>(kLeadColumns.size()),
                    header.end() - static_cast<long>(kTailColumns.size()));
  if (!records.back().complete) {
    out.torn_offset = records.back().offset;
    records.pop_back();
  }
  out.rows.assign(std::make_move_iterator(records.begin() + 1), std::make_move_iterator(records.end()));
  return out;
}

json parse_json_file(const fs::path& file) {
  const std::string text = read_text_file(file);
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw InputError(file.string() + ": not valid JSON (" + e.what() + ")");
  }
}

json stats_json(const Stats& s) {
  return {{"latency_avg_ns", s.mean_ns}, {"latency_median_ns", s.median_ns}, {"latency_std_ns", s.std_ns},
          {"latency_min_ns", s.min_ns},  {"latency_max_ns", s.max_ns},       {"count", s.count}};
}

Stats stats_from(const JsonPath& p) {
  Stats s;
  s.mean_ns = p["latency_avg_ns"].number();
  s.median_ns = p["latency_median_ns"].number();
  s.std_ns = p["latency_std_ns"].number();
  s.min_ns = p["latency_min_ns"].number();
  s.max_ns = p["latency_max_ns"].number();
  s.count = p["count"].unsigned_integer();
  return s;
}

json result_json(const ResultEntry& r) {
  json stats = stats_json(r.stats);
  stats["compile_time_s"] = r.compile_time_s;
  json j = {{"problem", r.problem.to_json()}, {"key", r.problem.key()}, {"config", r.config.to_json()},
            {"stats", stats},                {"tflops", r.tflops},     {"samples_ns", r.samples_ns}};
  if (r.baseline) {
    json b = stats_json(*r.baseline);
    b["name"] = r.baseline_name;
    if (r.best_paired) {
      b["paired_best"] = stats_json(*r.best_paired);
      b["speedup"] = r.baseline->median_ns / r.best_paired->median_ns;
    }
    j["baseline"] = b;
  }
  return j;
}

ResultEntry result_from(const JsonPath& p) {
  ResultEntry r;
  r.problem = p["problem"].parse(Problem::from_json);
  if (p["key"].string() != r.problem.key())
    p["key"].fail("'" + p["key"].string() + "' does not match the problem's key '" + r.problem.key() + "'");
  r.config = p["config"].parse(Config::from_json);
  r.stats = stats_from(p["stats"]);
  r.compile_time_s = p["stats"]["compile_time_s"].number();
  r.tflops = p["tflops"].number();
  r.samples_ns = p["samples_ns"].numbers();
  if (p.has("baseline")) {
    r.baseline = stats_from(p["baseline"]);
    r.baseline_name = p["baseline"]["name"].string();
    if (p["baseline"].has("paired_best")) r.best_paired = stats_from(p["baseline"]["paired_best"]);
  }
  return r;
}

json results_json(const RunResults& run) {
  json results = json::array();
  for (const auto& r : run.entries) results.push_back(result_json(r));
  return {{"run", run.run_name},
          {"family", run.family},
          {"backend", run.backend},
          {"device", run.device},
          {"device_slug", run.device_slug},
          {"benchmarking_method", run.method},
          {"finished_at", run.finished_at},
          {"results", results}};
}

RunResults results_from(const JsonPath& p) {
  RunResults run;
  run.run_name = p["run"].string();
  run.family = p["family"].string();
  run.backend = p["backend"].string();
  run.device = p["device"].string();
  run.device_slug = p["device_slug"].string();
  run.method = p["benchmarking_method"].string();
  run.finished_at = p["finished_at"].string();
  const JsonPath list = p["results"];
  for (std::size_t i = 0; i < list.size(); ++i) run.entries.push_back(result_from(list[i]));
  return run;
}

json trial_json(const Trial& t) {
  return {{"id", t.id},
          {"problem", t.problem_key},
          {"status", to_string(t.status)},
          {"config", t.config.to_json()},
          {"stats", stats_json(t.stats)},
          {"samples_ns", t.samples_ns},
          {"compile_time_s", t.compile_time_s},
          {"tflops", t.tflops},
          {"gbps", t.gbps},
          {"max_abs_error", t.max_abs_error},
          {"mismatch_fraction", t.mismatch_fraction},
          {"started_at_s", t.started_at_s},
          {"error", t.error}};
}

const std::set<std::string> kRunStates = {"running", "finished", "cancelled", "failed"};

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

void write_file_atomic(const fs::path& file, const std::string& text) {
  const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
  std::string tmp = (dir / ("." + file.filename().string() + ".tmp.XXXXXX")).string();
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) io_error("cannot create a temporary file beside", file, errno);
  auto fail = [&](const std::string& what) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    io_error(what, file, err);
  };
  // mkstemp makes the file private; keep the mode of the file it replaces, or the usual rw-r--r--.
  struct stat st {};
  const mode_t mode = ::stat(file.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0644;
  if (::fchmod(fd, mode) != 0) fail("cannot set permissions for");
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("cannot write");
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) fail("cannot sync");
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    io_error("cannot write", file, err);
  }
  if (::rename(tmp.c_str(), file.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    io_error("cannot replace", file, err);
  }
  // The rename is durable only once the folder is synced. Some file systems refuse fsync on a
  // folder (EINVAL); the file itself is complete either way, so that is not an error.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

std::string read_text_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError("cannot read " + file.string() + ": " + std::strerror(errno));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw InputError("cannot read " + file.string() + ": " + std::strerror(errno));
  return text;
}

std::string now_iso8601() { return format_utc("%Y-%m-%dT%H:%M:%SZ"); }

std::string default_run_name(const std::string& family) { return family + "_" + format_utc("%Y%m%d_%H%M%S"); }

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

// ---------------------------------------------------------------------------------------------
// RunMetadata

json RunMetadata::to_json() const {
  json problems_json = json::array();
  for (const auto& p : problems) problems_json.push_back(p.to_json());
  json versions_json = json::array();
  for (const auto& [name, v] : versions) versions_json.push_back({{"name", name}, {"version", v}});
  return {{"ktune_run", kRunFormat},
          {"run", run_name},
          {"family", family},
          {"backend", backend},
          {"device", device.to_json()},
          {"arguments", arguments},
          {"problems", problems_json},
          {"space", space.to_json()},
          {"strategy", ktune::to_json(strategy)},
          {"measure", ktune::to_json(measure)},
          {"tolerance", ktune::to_json(tolerance)},
          {"seed", seed},
          {"ktune_version", ktune_version},
          {"versions", versions_json},
          {"started_at", started_at},
          {"finished_at", finished_at},
          {"state", state}};
}

RunMetadata RunMetadata::from_json(const json& j) {
  const JsonPath root(j);
  const std::int64_t format = root["ktune_run"].integer();
  if (format != kRunFormat)
    root["ktune_run"].fail("run format " + std::to_string(format) + " is not supported by this ktune (it reads " +
                           std::to_string(kRunFormat) + ")");
  RunMetadata m;
  m.run_name = root["run"].string();
  m.family = root["family"].string();
  m.backend = root["backend"].string();
  m.device = root["device"].parse(DeviceInfo::from_json);
  for (std::size_t i = 0; i < root["arguments"].size(); ++i) m.arguments.push_back(root["arguments"][i].string());
  for (std::size_t i = 0; i < root["problems"].size(); ++i) m.problems.push_back(root["problems"][i].parse(Problem::from_json));
  m.space = root["space"].parse(SearchSpace::from_json);

  m.strategy = strategy_spec_from_json(root["strategy"].json());
  m.measure = measure_settings_from_json(root["measure"].json());
  m.tolerance = tolerance_from_json(root["tolerance"].json());

  m.seed = root["seed"].unsigned_integer();
  m.ktune_version = root["ktune_version"].string();
  const JsonPath versions = root["versions"];
  for (std::size_t i = 0; i < versions.size(); ++i)
    m.versions.emplace_back(versions[i]["name"].string(), versions[i]["version"].string());
  m.started_at = root["started_at"].string();
  m.finished_at = root["finished_at"].string();
  m.state = root["state"].string();
  if (!kRunStates.count(m.state)) root["state"].fail("'" + m.state + "' is not one of running, finished, cancelled, failed");
  return m;
}

// ---------------------------------------------------------------------------------------------
// RunStore

RunStore::RunStore(fs::path dir, RunMetadata metadata)
    : dir_(std::move(dir)), metadata_(std::move(metadata)), param_names_(param_names(metadata_.space)) {}
RunStore::RunStore(RunStore&&) noexcept = default;
RunStore& RunStore::operator=(RunStore&&) noexcept = default;
RunStore::~RunStore() = default;

namespace {

std::unique_ptr<std::ofstream> open_for_append(const fs::path& file) {
  auto out = std::make_unique<std::ofstream>(file, std::ios::binary | std::ios::app);
  if (!*out) throw RunError("cannot open " + file.string() + " for appending: " + std::strerror(errno));
  return out;
}

void write_metadata(const fs::path& dir, const RunMetadata& m) {
  write_file_atomic(dir / kMetadataFile, m.to_json().dump(2) + "\n");
}

void refuse_existing_run(const fs::path& dir) {
  if (fs::exists(dir / kMetadataFile))
    throw InputError(dir.string() + " already holds a run; use --resume or another --run-name");
}

FileLock lock_run_folder(const fs::path& dir) {
  std::optional<FileLock> lock = FileLock::try_acquire(dir / kLockFile);
  if (!lock)
    throw InputError(dir.string() + " is in use by another ktune process (a run still going?); wait for it to end or "
                     "use another --run-name");
  return std::move(*lock);
}

}  // namespace

RunStore RunStore::create(const fs::path& dir, const RunMetadata& metadata) {
  refuse_existing_run(dir);
  for (const auto& name : param_names(metadata.space)) {
    const bool clashes = std::find(kLeadColumns.begin(), kLeadColumns.end(), name) != kLeadColumns.end() ||
                         std::find(kTailColumns.begin(), kTailColumns.end(), name) != kTailColumns.end();
    if (clashes)
      throw InputError("parameter '" + name + "' has the name of a trials.csv column; rename the parameter");
  }
  RunStore store(dir, metadata);
  store.lock_ = lock_run_folder(dir);
  refuse_existing_run(dir);  // again under the lock: another process may have created it since
  // trials.csv first: run_metadata.json is what marks a folder as a run, so a kill in between
  // leaves no run that cannot be resumed.
  write_file_atomic(dir / kTrialsFile, csv::format_record(trial_header(store.param_names_)));
  write_metadata(dir, metadata);
  store.trials_ = open_for_append(dir / kTrialsFile);
  return store;
}

RunStore RunStore::open_for_resume(const fs::path& dir) {
  if (!fs::is_directory(dir))
    throw InputError(dir.string() + " is not a folder; --resume needs the folder of an earlier run");
  FileLock lock = lock_run_folder(dir);
  RunStore store(dir, read_metadata(dir));
  store.lock_ = std::move(lock);
  const fs::path trials = dir / kTrialsFile;
  const TrialsFile file = read_trials_file(trials);
  if (file.params != store.param_names_)
    throw InputError(trials.string() + ": its parameter columns (" + join(file.params, ",") +
                     ") do not match the run's search space (" + join(store.param_names_, ",") +
                     "); the folder is inconsistent, start a new run");
  if (file.torn_offset) {
    std::error_code ec;
    fs::resize_file(trials, *file.torn_offset, ec);
    if (ec) throw RunError("cannot cut the torn last row off " + trials.string() + ": " + ec.message());
  }
  store.metadata_.state = "running";
  store.metadata_.finished_at.clear();
  write_metadata(dir, store.metadata_);
  store.trials_ = open_for_append(trials);
  return store;
}

void RunStore::append(const Trial& trial) {
  *trials_ << csv::format_record(trial_row(trial, param_names_));
  trials_->flush();
  if (!*trials_) throw RunError("cannot append to " + (dir_ / kTrialsFile).string() + " (disk full?)");
}

void RunStore::finish(const std::vector<ProblemResult>& results, const std::string& state) {
  if (state == "running" || !kRunStates.count(state))
    throw InputError("a run finishes as finished, cancelled or failed, not '" + state + "'");
  RunResults run;
  run.run_name = metadata_.run_name;
  run.family = metadata_.family;
  run.backend = metadata_.backend;
  run.device = metadata_.device.name;
  run.device_slug = metadata_.device.slug();
  run.method = to_string(metadata_.measure.method);
  run.finished_at = now_iso8601();
  for (const auto& r : results) {
    if (!r.best) continue;
    ResultEntry e;
    e.problem = r.problem;
    e.config = r.best->config;
    e.stats = r.best->stats;
    e.samples_ns = r.best->samples_ns;
    e.compile_time_s = r.best->compile_time_s;
    e.tflops = r.best->tflops;
    e.baseline_name = r.baseline_name;
    e.baseline = r.baseline;
    e.best_paired = r.best_paired;
    run.entries.push_back(std::move(e));
  }
  write_file_atomic(dir_ / kResultsFile, results_json(run).dump(2) + "\n");
  metadata_.state = state;
  metadata_.finished_at = run.finished_at;
  write_metadata(dir_, metadata_);
}

RunMetadata RunStore::read_metadata(const fs::path& dir) {
  const fs::path file = dir / kMetadataFile;
  if (!fs::exists(file)) throw InputError(file.string() + " not found: " + dir.string() + " is not a ktune run folder");
  const json j = parse_json_file(file);
  try {
    return RunMetadata::from_json(j);
  } catch (const InputError& e) {
    throw InputError(file.string() + ": " + e.what());
  }
}

std::vector<Trial> RunStore::read_trials(const fs::path& dir) {
  const fs::path file = dir / kTrialsFile;
  const TrialsFile trials_file = read_trials_file(file);
  std::vector<Trial> trials;
  trials.reserve(trials_file.rows.size());
  for (const auto& row : trials_file.rows) {
    try {
      trials.push_back(parse_trial(row.fields, trials_file.params));
    } catch (const InputError& e) {
      throw InputError(file.string() + ":" + std::to_string(row.line) + ": " + e.what());
    }
  }
  return trials;
}

RunResults RunStore::read_results(const fs::path& dir) {
  const fs::path file = dir / kResultsFile;
  if (!fs::exists(file))
    throw InputError(file.string() + " not found: the run has not finished (resume it with --resume)");
  const SearchSpace space = read_metadata(dir).space;
  const json j = parse_json_file(file);
  RunResults run;
  try {
    run = results_from(JsonPath(j));
  } catch (const InputError& e) {
    throw InputError(file.string() + ": " + e.what());
  }
  for (auto& e : run.entries) e.config = in_space_order(e.config, space);
  return run;
}

// ---------------------------------------------------------------------------------------------
// Exports

std::string export_trials_csv(const fs::path& run_dir) {
  const std::vector<std::string> params = param_names(RunStore::read_metadata(run_dir).space);
  const std::vector<Trial> trials = RunStore::read_trials(run_dir);
  std::map<std::string, double> best;  // problem key -> best median of its ok trials
  for (const auto& t : trials)
    if (t.status == TrialStatus::Ok && t.stats.median_ns > 0) {
      auto [it, inserted] = best.emplace(t.problem_key, t.stats.median_ns);
      if (!inserted) it->second = std::min(it->second, t.stats.median_ns);
    }
  std::vector<std::string> header = trial_header(params);
  header.insert(header.end(), kExportColumns.begin(), kExportColumns.end());
  std::string out = csv::format_record(header);
  for (const auto& t : trials) {
    std::vector<std::string> row = trial_row(t, params);
    row.push_back(t.config.key());
    const bool timed = t.status == TrialStatus::Ok && t.stats.count >= 2 && t.stats.median_ns > 0;
    row.push_back(timed ? format_double(t.stats.rel_error()) : "");
    const auto b = best.find(t.problem_key);
    row.push_back(t.status == TrialStatus::Ok && b != best.end() ? format_double(t.stats.median_ns / b->second) : "");
    out += csv::format_record(row);
  }
  return out;
}

json export_run_json(const fs::path& run_dir) {
  json trials = json::array();
  for (const auto& t : RunStore::read_trials(run_dir)) trials.push_back(trial_json(t));
  const bool finished = fs::exists(run_dir / kResultsFile);
  return {{"metadata", RunStore::read_metadata(run_dir).to_json()},
          {"trials", trials},
          {"results", finished ? results_json(RunStore::read_results(run_dir)) : json(nullptr)}};
}

}  // namespace ktune
