#pragma once
// The run store's file formats, private to the core: trials.csv (one row per trial, one column
// per space parameter), results.json and the trials of a JSON export.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "json_path.h"
#include "ktune/csv.h"
#include "ktune/run_store.h"

namespace ktune::detail {

inline constexpr const char* kMetadataFile = "run_metadata.json";
inline constexpr const char* kTrialsFile = "trials.csv";
inline constexpr const char* kResultsFile = "results.json";
inline constexpr const char* kLockFile = ".ktune.lock";
inline constexpr int kRunFormat = 1;

// trials.csv: these columns, with one column per space parameter between them.
inline const std::vector<std::string> kLeadColumns = {"id", "problem", "status"};
inline const std::vector<std::string> kTailColumns = {"median_ns",
                                                      "mean_ns",
                                                      "std_ns",
                                                      "min_ns",
                                                      "max_ns",
                                                      "count",
                                                      "compile_time_s",
                                                      "tflops",
                                                      "gbps",
                                                      "max_abs_error",
                                                      "mismatch_fraction",
                                                      "started_at_s",
                                                      "error",
                                                      "samples_ns"};
// Last column, a JSON object of further metrics by name (Trial::metrics). Files written before it
// existed end at samples_ns; they still read, and resuming one keeps its layout.
inline const std::string kMetricsColumn = "metrics";
// Derived columns export_trials_csv adds for other tools.
inline const std::vector<std::string> kExportColumns = {"config", "rel_error", "vs_best"};

struct TrialsFile {
  std::vector<std::string> params;
  bool metrics_column = true;
  std::vector<csv::Record> rows;           // complete rows only
  std::optional<std::size_t> torn_offset;  // where a torn last row starts
  std::optional<std::size_t> torn_line;    // and its line
};

std::vector<std::string> trial_header(const std::vector<std::string>& params, bool metrics_column = true);
std::vector<std::string> param_names(const SearchSpace& space);
std::string join(const std::vector<std::string>& items, const std::string& sep);
// Shortest text that reads back as the same double.
std::string format_double(double v);
std::vector<std::string> trial_row(const Trial& t, const std::vector<std::string>& params, bool metrics_column = true);
// `fields` follows trial_header(params). Errors name the column; the caller adds file and line.
// An ok row whose median or samples are no times reads as a crashed trial that says why.
Trial parse_trial(const std::vector<std::string>& fields, const std::vector<std::string>& params, bool metrics_column);
// Reads and checks trials.csv's header; returns its parameter columns and its complete rows.
TrialsFile read_trials_file(const std::filesystem::path& file);
nlohmann::json results_json(const RunResults& run);
RunResults results_from(const JsonPath& p);
nlohmann::json trial_json(const Trial& t);

}  // namespace ktune::detail
