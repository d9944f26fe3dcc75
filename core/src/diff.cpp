#include "ktune/diff.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

#include "ktune/error.h"
#include "ktune/version.h"

namespace ktune {

namespace fs = std::filesystem;

std::string describe_progress(const RunResults& run) {
  std::string out = std::to_string(run.measured);
  if (run.planned) out += " of " + std::to_string(run.planned);
  return out + " configs measured";
}

const char* to_string(DiffClass c) {
  switch (c) {
    case DiffClass::New:
      return "new";
    case DiffClass::Faster:
      return "faster";
    case DiffClass::Slower:
      return "slower";
    case DiffClass::Same:
      return "same";
    case DiffClass::NotComparable:
      return "not comparable";
    case DiffClass::Unmeasured:
      return "unmeasured";
  }
  return "unknown";
}

namespace {

double median_of(std::vector<double> v) {
  const std::size_t n = v.size();
  std::nth_element(v.begin(), v.begin() + static_cast<long>(n / 2), v.end());
  const double upper = v[n / 2];
  if (n % 2) return upper;
  return 0.5 * (*std::max_element(v.begin(), v.begin() + static_cast<long>(n / 2)) + upper);
}

// Standard error of the median estimate relative to the median: sqrt(pi/2) * sigma / sqrt(n),
// with sigma estimated as 1.4826 x the median absolute deviation rather than the standard
// deviation, so that one preempted sample does not make every comparison "same". 0 when the
// samples cannot tell (fewer than two), so the fixed threshold alone decides.
double median_rel_std_error(const std::vector<double>& samples) {
  if (samples.size() < 2) return 0;
  const double median = median_of(samples);
  if (!(median > 0)) return 0;
  std::vector<double> deviations;
  deviations.reserve(samples.size());
  for (double x : samples) deviations.push_back(std::abs(x - median));
  const double sigma = 1.4826 * median_of(std::move(deviations));
  return 1.2533 * sigma / std::sqrt(static_cast<double>(samples.size())) / median;
}

RegistryEntry registry_entry(const RunResults& run, const ResultEntry& r) {
  RegistryEntry e;
  e.config = r.config;
  e.latency_avg_ns = r.stats.mean_ns;
  e.latency_median_ns = r.stats.median_ns;
  e.latency_std_ns = r.stats.std_ns;
  e.compile_time_s = r.compile_time_s;
  e.benchmarking_method = run.method;
  e.samples_ns = r.samples_ns;
  e.run = run.run_name;
  // The run's end, not the time of applying: applying the same run twice gives the same entry.
  e.tuned_at = run.finished_at;
  e.ktune_version = version();
  e.tp_size = r.problem.tp_size;
  if (e.tp_size > 1) e.tp_split_dim = to_string(r.problem.tp_split_dim);
  e.versions = run.versions;
  e.chosen_by = r.choice.by;
  e.search_median_ns = r.choice.search.median_ns;
  e.flags = r.choice.flags;
  e.conditions = r.conditions;
  return e;
}

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// registry_entry, refusing a result without a median to compare.
RegistryEntry checked_entry(const RunResults& run, const ResultEntry& r) {
  RegistryEntry e = registry_entry(run, r);
  if (!(e.latency_median_ns > 0) || !std::isfinite(e.latency_median_ns))
    throw InputError("run " + run.run_name + ": result " + r.problem.local_key() + " has no valid median latency (" +
                     format("%g", e.latency_median_ns) + " ns); its results.json is damaged");
  return e;
}

struct Loaded {
  Registry registry;
  RegistryDiff diff;
};

// Faster, slower or same from a ratio (old / new) and the relative difference that is noise.
DiffClass classify(double ratio, double threshold) {
  // Symmetric: 2x faster and 2x slower are the same distance from "same".
  const double rel_diff = std::max(ratio, 1 / ratio) - 1;
  return rel_diff <= threshold ? DiffClass::Same : ratio > 1 ? DiffClass::Faster : DiffClass::Slower;
}

double noise_threshold(double same_threshold, const std::vector<double>& a, const std::vector<double>& b) {
  return std::max(same_threshold, 2 * std::hypot(median_rel_std_error(a), median_rel_std_error(b)));
}

// Ratio, threshold and what they compare for an entry whose key the registry has. A re-measured
// winner's median is taken in alternation with its rivals, a search's alone at another moment:
// where the two entries were decided differently, their search medians are what compares (the
// samples of those are not kept, so the fixed threshold alone tells noise).
void compare_like_with_like(DiffEntry& d, double same_threshold) {
  const RegistryEntry& old = *d.old_entry;
  const RegistryEntry& now = d.new_entry;
  const bool old_known = old.search_median_ns > 0;  // entries of ktune before the choice was recorded, imports: not
  if (old_known && old.chosen_by != now.chosen_by) {
    d.old_ns = old.search_median_ns;
    d.new_ns = now.search_median_ns;
    d.compared = "search medians";
    d.threshold = same_threshold;
  } else {
    d.old_ns = old.latency_median_ns;
    d.new_ns = now.latency_median_ns;
    d.compared = !old_known                             ? "recorded medians"
                 : now.chosen_by == ChosenBy::Remeasure ? "re-measure medians"
                                                        : "search medians";
    d.threshold = noise_threshold(same_threshold, old.samples_ns, now.samples_ns);
  }
  d.ratio = d.old_ns / d.new_ns;
}

// DiffEntry::conditions_note, ComparedShape::conditions_note: where both sides' numbers were
// taken at SM clocks more than 3 % apart (a GPU at its power cap runs at 1,400-1,600 MHz instead
// of 1,980), the ratio holds the clock's difference beside the configs'. The sides are named
// `old_name` and `new_name` ("old", "new").
std::string clock_note(const RegistryEntry& old, const RegistryEntry& now, const std::string& old_name = "old",
                       const std::string& new_name = "new") {
  constexpr double kClockTolerance = 0.03;
  const auto o = old.conditions.find(kSmClockMhz), n = now.conditions.find(kSmClockMhz);
  if (o == old.conditions.end() || n == now.conditions.end() || !(o->second > 0) || !(n->second > 0)) return {};
  if (std::max(o->second, n->second) / std::min(o->second, n->second) - 1 <= kClockTolerance) return {};
  return old_name + " measured at " + format("%.0f", o->second) + " MHz, " + new_name + " at " +
         format("%.0f", n->second) + " MHz: the ratio carries the clock";
}

Loaded load_and_diff(const RunResults& run, const fs::path& registry_root, double same_threshold,
                     const std::vector<PairedVerdict>& paired) {
  Loaded out;
  out.diff.registry_file = Registry::file_for(registry_root, run.backend, run.device_slug);
  const fs::path& file = out.diff.registry_file;
  out.registry = Registry::load(file);
  if (!fs::exists(file)) out.registry = Registry(run.backend, run.device_slug);
  if (out.registry.backend() != run.backend || out.registry.device() != run.device_slug)
    throw InputError(file.string() + " holds the registry of " + out.registry.backend() + "/" + out.registry.device() +
                     ", not of run " + run.run_name + "'s " + run.backend + "/" + run.device_slug +
                     "; fix its \"backend\" and \"device\" fields or move it away");

  for (const auto& r : run.entries) {
    DiffEntry d;
    d.family = r.problem.family.empty() ? run.family : r.problem.family;
    d.key = r.problem.local_key();
    d.new_entry = checked_entry(run, r);
    d.new_ns = d.new_entry.latency_median_ns;
    d.compared = std::string(describe(d.new_entry.chosen_by)) + " median";
    if (const RegistryEntry* old = out.registry.find(d.family, d.key)) {
      d.old_entry = *old;
      d.old_entry->config = in_order_of(old->config, r.config);
      if (!old->measured()) {
        d.cls = DiffClass::Unmeasured;
        d.compared = "registry entry unmeasured";
      } else {
        compare_like_with_like(d, same_threshold);
        d.cls = classify(d.ratio, d.threshold);
        if (old->benchmarking_method != d.new_entry.benchmarking_method) d.cls = DiffClass::NotComparable;
      }
      const auto v = std::find_if(paired.begin(), paired.end(),
                                  [&](const PairedVerdict& p) { return p.family == d.family && p.key == d.key; });
      if (v != paired.end() && !v->registry_samples_ns.empty() && !v->run_samples_ns.empty() &&
          v->registry_config.same_values(old->config)) {
        d.old_ns = summarize(v->registry_samples_ns).median_ns;
        d.new_ns = summarize(v->run_samples_ns).median_ns;
        d.ratio = d.old_ns / d.new_ns;
        d.threshold = noise_threshold(same_threshold, v->registry_samples_ns, v->run_samples_ns);
        d.cls = classify(d.ratio, d.threshold);
        d.paired = true;
        d.compared = "paired re-measure";
      }
      if (!d.paired && old->measured()) d.conditions_note = clock_note(*old, d.new_entry);
    }
    out.diff.entries.push_back(std::move(d));
  }
  // Listed by family, then key fields as numbers, whatever order the run tuned them in.
  std::stable_sort(out.diff.entries.begin(), out.diff.entries.end(), [](const DiffEntry& a, const DiffEntry& b) {
    return a.family != b.family ? a.family < b.family : compare_keys(a.key, b.key) < 0;
  });
  return out;
}

}  // namespace

RegistryDiff diff_run(const RunResults& run, const fs::path& registry_root, double same_threshold,
                      const std::vector<PairedVerdict>& paired) {
  return load_and_diff(run, registry_root, same_threshold, paired).diff;
}

namespace {

// A shape's key fields as a set, with its sharding: runs that list the fields in another order
// still pair.
std::string shape_identity(const Problem& p) {
  std::vector<std::pair<std::string, std::string>> fields = p.fields;
  std::sort(fields.begin(), fields.end());
  std::string out;
  for (const auto& [name, value] : fields) out += name + "=" + value + ",";
  return out + "tp=" + std::to_string(p.tp_size) + "/" + to_string(p.tp_split_dim);
}

// The fields a run keys its shapes by, in its first shape's order.
std::vector<std::string> key_fields(const RunResults& run) {
  std::vector<std::string> names;
  for (const ResultEntry& r : run.entries)
    for (const auto& field : r.problem.fields)
      if (std::find(names.begin(), names.end(), field.first) == names.end()) names.push_back(field.first);
  return names;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// The number a shape of one run alone shows: its winner's.
ComparedShape alone(const std::string& key, const RegistryEntry& entry, bool inRun) {
  ComparedShape c;
  c.key = key;
  (inRun ? c.run : c.other) = entry;
  (inRun ? c.run_ns : c.other_ns) = entry.latency_median_ns;
  c.compared = std::string(describe(entry.chosen_by)) + " median";
  return c;
}

}  // namespace

std::string comparison_mismatch(const RunResults& run, const RunResults& other) {
  const std::string a = "run " + run.run_name, b = "run " + other.run_name;
  for (const RunResults* r : {&run, &other})
    if (r->entries.empty())
      return "run " + r->run_name + " has no winner of any shape (its results.json lists none): nothing to compare";
  if (run.family != other.family)
    return b + " tunes " + other.family + ", " + a + " tunes " + run.family +
           ": winners of different kernels do not compare; choose a run of " + run.family;
  std::vector<std::string> fa = key_fields(run), fb = key_fields(other);
  std::vector<std::string> sa = fa, sb = fb;
  std::sort(sa.begin(), sa.end());
  std::sort(sb.begin(), sb.end());
  if (sa != sb)
    return b + " keys its " + other.family + " shapes by " + joined(fb) + ", " + a + " by " + joined(fa) +
           ": its shapes cannot be paired with this run's (another version of the family?)";
  return {};
}

RunComparison compare_runs(const RunResults& run, const RunResults& other, double same_threshold) {
  if (const std::string why = comparison_mismatch(run, other); !why.empty()) throw InputError(why);
  RunComparison out;
  std::map<std::string, const ResultEntry*> others;
  for (const ResultEntry& o : other.entries) others.emplace(shape_identity(o.problem), &o);
  for (const ResultEntry& r : run.entries) {
    const auto match = others.find(shape_identity(r.problem));
    if (match == others.end()) {
      out.shapes.push_back(alone(r.problem.key(), checked_entry(run, r), true));
      ++out.only_run;
      continue;
    }
    // The other run in the registry's place, compared as diff_run compares.
    DiffEntry d;
    d.new_entry = checked_entry(run, r);
    d.old_entry = checked_entry(other, *match->second);
    d.old_entry->config = in_order_of(d.old_entry->config, r.config);
    compare_like_with_like(d, same_threshold);
    d.cls = run.method != other.method ? DiffClass::NotComparable : classify(d.ratio, d.threshold);
    out.shapes.push_back(ComparedShape{r.problem.key(), d.new_entry, d.old_entry, d.cls, d.ratio, d.threshold, d.new_ns,
                                       d.old_ns, d.compared,
                                       clock_note(*d.old_entry, d.new_entry, "the other run", "this run")});
    others.erase(match);
    ++out.both;
  }
  for (const auto& [identity, o] : others) {
    out.shapes.push_back(alone(o->problem.key(), checked_entry(other, *o), false));
    ++out.only_other;
  }
  std::stable_sort(out.shapes.begin(), out.shapes.end(),
                   [](const ComparedShape& x, const ComparedShape& y) { return compare_keys(x.key, y.key) < 0; });
  return out;
}

namespace {

std::string ratio_text(const DiffEntry& d) { return "ratio " + format("%.4f", d.ratio) + " of " + d.compared; }

// What applying would write and skip, against the registry as it is now.
ApplyReport plan_apply(const RunResults& run, const Loaded& loaded, const ApplyOptions& options) {
  const auto& entries = loaded.diff.entries;
  for (const auto& key : options.keys) {
    const bool known = std::any_of(entries.begin(), entries.end(), [&](const DiffEntry& d) { return d.key == key; });
    if (!known) {
      std::string valid;
      for (const auto& d : entries) {
        if (!valid.empty()) valid += ", ";
        valid += "'" + d.key + "'";
      }
      throw InputError("run " + run.run_name + " has no result for key '" + key +
                       "'; its keys are: " + (valid.empty() ? "(none)" : valid));
    }
  }

  ApplyReport report;
  report.registry_file = loaded.diff.registry_file;
  auto skip = [&](const DiffEntry& d, std::string reason) {
    report.skipped.push_back(d);
    report.skip_reasons.push_back(std::move(reason));
  };
  for (const auto& d : entries) {
    const bool chosen =
        options.keys.empty() || std::find(options.keys.begin(), options.keys.end(), d.key) != options.keys.end();
    if (!chosen) {
      skip(d, "not chosen");
    } else if (d.new_entry.flags.any() && !options.accept_flagged) {
      std::string flags;
      for (const auto& f : d.new_entry.flags.names()) flags += (flags.empty() ? "" : ", ") + f;
      skip(d, "flagged " + flags +
                  ": its number may not hold (see the run's warnings); tune it again, or apply it "
                  "anyway with --accept-flagged");
    } else if (d.cls == DiffClass::Same) {
      skip(d, "same as the registry entry within noise (" + ratio_text(d) + ", threshold " +
                  format("%.1f", 100 * d.threshold) + "%)");
    } else if (d.cls == DiffClass::Slower && !options.force) {
      skip(d, "slower than the registry entry (" + ratio_text(d) + "); use --force to replace it");
    } else if (d.cls == DiffClass::Unmeasured && !options.force) {
      skip(d, "the registry entry has no measurement (" +
                  (d.old_entry->imported_from.empty() ? std::string("no stats") : d.old_entry->imported_from) +
                  "): whether the run's config is faster is not known; `ktune apply --remeasure` times both, "
                  "--force replaces it");
    } else if (d.cls == DiffClass::NotComparable && !options.force) {
      skip(d, "not comparable: measured " + d.new_entry.benchmarking_method + ", the registry entry " +
                  d.old_entry->benchmarking_method + "; use --force to replace it");
    } else {
      report.written.push_back(d);
    }
  }
  return report;
}

}  // namespace

FileLock lock_registry(const fs::path& registry_file) {
  std::string lock_name = ".";
  lock_name += registry_file.filename().string();
  lock_name += ".lock";
  return FileLock::acquire(registry_file.parent_path() / lock_name);
}

ApplyReport apply_run(const RunResults& run, const fs::path& registry_root, const ApplyOptions& options) {
  if (run.state != "finished" && !options.allow_unfinished)
    throw InputError("run " + run.run_name + " is " + (run.state.empty() ? "of unknown state" : run.state) + " (" +
                     describe_progress(run) +
                     "): its results are partial; resume it with `ktune tune --resume --run-name " + run.run_name +
                     "` or apply anyway with --allow-unfinished");
  if (options.dry_run)
    return plan_apply(run, load_and_diff(run, registry_root, options.same_threshold, options.paired), options);

  // Read, plan and write under an exclusive lock beside the registry: concurrent applies (one
  // tuning job per GPU of a node, each with --update-registry) must not lose each other's
  // entries. The registry is read once, under the lock: a large one takes a while to read.
  const fs::path file = Registry::file_for(registry_root, run.backend, run.device_slug);
  std::optional<FileLock> lock;
  try {
    if (fs::is_directory(file.parent_path())) lock = lock_registry(file);
  } catch (const RunError&) {
    // A folder it cannot make a lock file in (read-only): fine for an apply that writes nothing;
    // one that writes fails below, naming the lock file.
  }
  Loaded loaded = load_and_diff(run, registry_root, options.same_threshold, options.paired);
  ApplyReport report = plan_apply(run, loaded, options);
  if (report.written.empty()) return report;
  // A registry's first apply: the lock makes its folder (not made for an apply that writes
  // nothing), and the file is read again under it (another apply may have written it meanwhile).
  if (!lock) {
    lock = lock_registry(file);
    loaded = load_and_diff(run, registry_root, options.same_threshold, options.paired);
    report = plan_apply(run, loaded, options);
    if (report.written.empty()) return report;
  }
  const bool had_file = fs::exists(report.registry_file);
  for (const auto& d : report.written) loaded.registry.set(d.family, d.key, d.new_entry);
  // A worker's family travels with its entries: lookup and export find it in the registry alone.
  if (!run.family_description.is_null()) loaded.registry.set_family_description(run.family, run.family_description);
  loaded.registry.save(report.registry_file);
  if (had_file) report.backup_file = report.registry_file.string() + ".bak";
  return report;
}

}  // namespace ktune
