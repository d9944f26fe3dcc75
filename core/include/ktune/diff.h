#pragma once
// Diff a run's results against the registry, key by key, and apply only what was approved.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "ktune/registry.h"
#include "ktune/run_store.h"

namespace ktune {

// NotComparable: the registry entry was measured with another benchmarking method (amortized
// throughput vs per-launch latency), so the two numbers do not say which config is faster.
// Unmeasured: the registry entry has no measurement (RegistryEntry::measured), so nothing says
// either; a paired re-measure (`apply --remeasure`) classes it faster, slower or same.
enum class DiffClass { New, Faster, Slower, Same, NotComparable, Unmeasured };
const char* to_string(DiffClass c);  // "new", "faster", "slower", "same", "not comparable", "unmeasured"

// "69 of 112 configs measured" (without "of N" for runs that predate the planned count).
std::string describe_progress(const RunResults& run);

struct DiffEntry {
  std::string family;
  std::string key;  // Problem::local_key(): the registry's key
  DiffClass cls = DiffClass::New;
  std::optional<RegistryEntry> old_entry;
  RegistryEntry new_entry;  // built from the run's result
  double ratio = 0;         // old median / new median (> 1: the run is faster); 0 for new
  // Relative difference within which the two count as the same: the larger of same_threshold
  // and twice the combined relative standard error of the two medians (estimated from their
  // samples' median absolute deviation, robust to outliers); 0 for new.
  double threshold = 0;
  // ratio and threshold come from a paired re-measurement of both configs (PairedVerdict), not
  // from the recorded medians.
  bool paired = false;
  // The two numbers the ratio compares, always of one kind: the winners' re-measures, their
  // searches' own timings (when one side was re-measured and the other not, both search medians),
  // entries' recorded medians (older entries and imports), or the paired re-measure of both
  // configs now; `compared` says which, for every front end to show ("re-measure medians",
  // "search medians", "recorded medians", "paired re-measure"; a new key's own: "re-measure
  // median", "search median").
  double old_ns = 0, new_ns = 0;
  std::string compared;
  // Set when the registry entry and the run's result were measured at SM clocks more than 3 %
  // apart (their conditions, conditions.h), for every front end to print beside the ratio: "old
  // measured at 1980 MHz, new at 1425 MHz: the ratio carries the clock". Says it only: the class
  // stands as the numbers give it. Empty when either side has no clock, and for a paired verdict
  // (both timed at the same moment).
  std::string conditions_note;
};

// A key judged again with fresh numbers: the registry's config and the run's, timed side by side
// in alternation on the device (judge_on_device, `ktune apply --remeasure`). Its samples replace
// the recorded medians in the diff; a verdict with a note and no samples leaves the recorded
// diff standing, and so does one whose registry config is no longer the registry's.
struct PairedVerdict {
  std::string family;
  std::string key;
  Config registry_config;  // what was timed against the run's config
  std::vector<double> registry_samples_ns;
  std::vector<double> run_samples_ns;
  std::string note;  // why the pair could not be timed
};

struct RegistryDiff {
  std::filesystem::path registry_file;
  std::vector<DiffEntry> entries;
};

// `same_threshold`: relative difference of medians under which two entries count as the same
// (noise). The effective threshold also grows with the samples' standard errors.
// With `paired`, the keys they judged are classed from the paired samples (the same method on the
// same device at the same moment: comparable whatever the recorded methods).
RegistryDiff diff_run(const RunResults& run, const std::filesystem::path& registry_root, double same_threshold = 0.02,
                      const std::vector<PairedVerdict>& paired = {});

// Two runs side by side, shape by shape: the same shapes on two devices, on two dates, or before
// and after a kernel change. A comparison only: nothing is written anywhere. Each shape's two
// winners are compared as diff_run compares a run with the registry (like with like; the
// threshold of "same" grows with the samples' noise; another benchmarking method is not
// comparable), the other run in the registry's place: Faster means this run's winner is faster.
struct ComparedShape {
  std::string key;                     // Problem::key() (this run's spelling where both have it)
  std::optional<RegistryEntry> run;    // this run's winner, as apply would write it; absent: only the other has it
  std::optional<RegistryEntry> other;  // the other run's, its config in this run's order; absent: only this run
  DiffClass cls = DiffClass::New;      // where both have it: Faster, Slower, Same, NotComparable or Unmeasured
  double ratio = 0;                    // other's number / this run's (> 1: this run faster); 0 unless both
  double threshold = 0;                // relative difference that is noise
  double run_ns = 0, other_ns = 0;     // the numbers compared (each run's own where one lacks the shape)
  std::string compared;                // which numbers, as DiffEntry::compared says it
  // Set where the two numbers were measured at SM clocks more than 3 % apart, as
  // DiffEntry::conditions_note ("the other run measured at 1980 MHz, this run at 1425 MHz: ...").
  std::string conditions_note;
  bool both() const { return run && other; }
};

struct RunComparison {
  std::vector<ComparedShape> shapes;  // every shape of either run, in key order (compare_keys)
  std::size_t both = 0, only_run = 0, only_other = 0;
};

// Why `other`'s shapes cannot be paired with `run`'s (another family; shapes keyed by other
// fields), naming both runs and what each has; empty when they can.
std::string comparison_mismatch(const RunResults& run, const RunResults& other);
// Pairs the two runs' winners by shape: shapes are the same when their key fields hold the same
// values, in whatever order the keys list them. Throws InputError with comparison_mismatch's
// sentence, or naming a result without a valid median.
RunComparison compare_runs(const RunResults& run, const RunResults& other, double same_threshold = 0.02);

struct ApplyOptions {
  // Problem keys to apply; empty = every new or faster one (and, with force, every slower one).
  std::vector<std::string> keys;
  bool force = false;             // allow replacing an entry with a slower or not comparable one
  bool accept_flagged = false;    // apply entries whose number is flagged (noisy, re-measure disagrees)
  bool allow_unfinished = false;  // apply a run that is not finished (cancelled, failed, running)
  bool dry_run = false;
  double same_threshold = 0.02;
  std::vector<PairedVerdict> paired;  // fresh paired numbers decide these keys (diff_run)
};

struct ApplyReport {
  std::filesystem::path registry_file;
  std::filesystem::path backup_file;  // empty when there was no previous file or nothing written
  std::vector<DiffEntry> written;
  std::vector<DiffEntry> skipped;  // with reason in skip_reasons (same index)
  std::vector<std::string> skip_reasons;
  bool changed() const { return !written.empty(); }
};

// Applies the chosen keys atomically. A run whose state is not "finished" is an InputError
// unless options.allow_unfinished: its results are partial. Slower and not comparable entries
// are skipped unless force; flagged ones (WinnerFlags) unless accept_flagged; same ones are
// skipped (nothing to change). Unknown keys in options.keys are an InputError. Nothing is
// written when dry_run or when nothing changes; otherwise the registry file is written once, its
// previous version kept as <file>.bak, under an exclusive lock (.<file>.lock beside it) so that
// concurrent applies to one registry do not lose each other's entries. A registry file for another backend or device
// than the run's is an InputError.
ApplyReport apply_run(const RunResults& run, const std::filesystem::path& registry_root, const ApplyOptions& options);

// The exclusive lock every writer of `registry_file` holds while it reads, changes and saves it
// (.<file>.lock beside it): apply and registry import.
FileLock lock_registry(const std::filesystem::path& registry_file);

}  // namespace ktune
