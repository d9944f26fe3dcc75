#include "ktune/widgets/run_document.h"

#include <QtConcurrent>
#include <fstream>

#include "ktune/error.h"
#include "ktune/kernel_tuner_import.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/trials_model.h"

namespace ktune::gui {

namespace fs = std::filesystem;

fs::path RunDocument::importKernelTunerCache(const fs::path& cacheFile, const fs::path& outputDir) {
  KernelTunerCache cache = read_kernel_tuner_cache(cacheFile);
  const std::string name = default_run_name(cache.metadata.family);
  fs::path dir = run_folder(outputDir, name);
  // Two imports within a second would share the name: the second gets a suffix.
  for (int n = 2; fs::exists(dir); ++n) dir = run_folder(outputDir, name + "_" + std::to_string(n));
  write_imported_run(dir, std::move(cache));
  return dir;
}

RunDocument::RunDocument(QObject* parent) : QObject(parent), trials_(new TrialsModel(this)) {
  connect(&loader_, &QFutureWatcher<Outcome>::finished, this, [this] {
    Outcome outcome = loader_.result();
    if (!outcome.run) {
      emit failed(outcome.error);
      return;
    }
    LoadedRun& run = *outcome.run;
    dir_ = run.dir;
    metadata_ = std::move(run.metadata);
    results_ = std::move(run.results);
    if (!onlyResults_) {
      QStringList params;
      for (const Parameter& p : metadata_->space.parameters()) params << qstr(p.name);
      trials_->setRunName(qstr(metadata_->run_name.empty() ? dir_.filename().string() : metadata_->run_name));
      trials_->setTrials(params, std::move(run.trials));
      trials_->setPruning(metadata_->space, metadata_->pruning);
    }
    // What results.json says won, also after a live run: the one truth every page shows.
    trials_->setWinners(results_ ? winnersOf(*results_) : std::vector<Winner>{});
    if (!onlyResults_) emit opened();
    emit resultsChanged();
  });
  connect(&exporter_, &QFutureWatcher<QString>::finished, this, [this] {
    const QString error = exporter_.result();
    if (error.isEmpty())
      emit exported(exportFile_);
    else
      emit failed(error);
  });
}

RunDocument::~RunDocument() {
  loader_.waitForFinished();
  exporter_.waitForFinished();
}

bool RunDocument::canResume() const {
  // A stopped (cancelled) or failed run has a results.json of what it measured, and continues too.
  return metadata_ && metadata_->state != "finished";
}

LoadedRun RunDocument::load(const fs::path& dir) {
  if (!fs::is_directory(dir))
    throw InputError(dir.string() + " is not a folder: choose a run folder (it holds run_metadata.json)");
  LoadedRun run;
  run.dir = dir;
  run.metadata = RunStore::read_metadata(dir);
  run.trials = RunStore::read_trials(dir);
  if (fs::exists(dir / "results.json")) run.results = RunStore::read_results(dir);
  return run;
}

void RunDocument::open(const QString& dir) {
  if (loader_.isRunning()) {
    emit failed(tr("Still opening the previous run; try again in a moment."));
    return;
  }
  onlyResults_ = false;
  loader_.setFuture(QtConcurrent::run([dir = fs::path(sstr(dir))]() -> Outcome {
    try {
      return Outcome{load(dir), {}};
    } catch (const std::exception& e) {
      return Outcome{std::nullopt,
                     tr("Cannot open the run %1:\n%2").arg(qstr(dir.string()), QString::fromUtf8(e.what()))};
    }
  }));
}

void RunDocument::beginLiveRun(const TuneRequest& request) {
  QStringList params;
  for (const Parameter& p : request.space.parameters()) params << qstr(p.name);
  dir_ = request.run_dir;
  metadata_.reset();
  results_.reset();
  trials_->setRunName(qstr(request.run_dir.filename().string()));
  trials_->reset(params);
  trials_->setPruning(request.space, {});  // the problems' records follow as the tuner reaches them
  emit resultsChanged();
}

void RunDocument::finishLiveRun() {
  if (dir_.empty() || loader_.isRunning()) return;
  onlyResults_ = true;
  loader_.setFuture(QtConcurrent::run([dir = dir_]() -> Outcome {
    try {
      LoadedRun run;
      run.dir = dir;
      run.metadata = RunStore::read_metadata(dir);
      if (fs::exists(dir / "results.json")) run.results = RunStore::read_results(dir);
      return Outcome{std::move(run), {}};
    } catch (const std::exception& e) {
      return Outcome{std::nullopt,
                     tr("The run ended but its folder cannot be read back:\n%1").arg(QString::fromUtf8(e.what()))};
    }
  }));
}

void RunDocument::exportTo(ExportFormat format, const QString& file) {
  if (dir_.empty()) {
    emit failed(tr("Nothing to export: open a run or run one first."));
    return;
  }
  if (exporter_.isRunning()) {
    emit failed(tr("An export is still being written; try again in a moment."));
    return;
  }
  exportFile_ = file;
  exporter_.setFuture(QtConcurrent::run([dir = dir_, format, file = fs::path(sstr(file))]() -> QString {
    try {
      const std::string text =
          format == ExportFormat::TrialsCsv ? export_trials_csv(dir) : export_run_json(dir).dump(2) + "\n";
      write_file_atomic(file, text);
      return {};
    } catch (const std::exception& e) {
      return tr("Export to %1 failed: %2\nChoose a writable folder and try again.")
          .arg(qstr(file.string()), QString::fromUtf8(e.what()));
    }
  }));
}

}  // namespace ktune::gui
