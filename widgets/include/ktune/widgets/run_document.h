#pragma once
// RunDocument: the run the workbench shows, live or reopened. Opening a run folder and
// exporting it read every trial, so both happen on a worker thread (QtConcurrent); the
// document changes only when a load succeeds, and a failure leaves it as it was.
#include <QFutureWatcher>
#include <QObject>
#include <filesystem>
#include <optional>

#include "ktune/run_store.h"
#include "ktune/tuner.h"

namespace ktune::gui {

class TrialsModel;

struct LoadedRun {
  std::filesystem::path dir;
  RunMetadata metadata;
  std::vector<Trial> trials;
  std::optional<RunResults> results;  // absent while the run has not finished
};

class RunDocument : public QObject {
  Q_OBJECT
 public:
  explicit RunDocument(QObject* parent = nullptr);
  ~RunDocument() override;

  TrialsModel* trials() const { return trials_; }
  bool hasRun() const { return metadata_.has_value(); }
  const std::filesystem::path& dir() const { return dir_; }
  const std::optional<RunMetadata>& metadata() const { return metadata_; }
  const std::optional<RunResults>& results() const { return results_; }
  // A run that did not finish (killed, stopped, failed) can be resumed.
  bool canResume() const;
  bool isBusy() const { return loader_.isRunning() || exporter_.isRunning(); }

  // Reads `dir` off the UI thread; emits opened() or failed().
  void open(const QString& dir);
  // Reads a run folder; throws InputError naming the file and what is wrong.
  static LoadedRun load(const std::filesystem::path& dir);
  // File → Import → Kernel Tuner cache: turns the cache file into a finished run folder under
  // `outputDir` (named <family>_<date>_<time>, as `ktune import kernel-tuner` names it) and
  // returns the folder, for open(). Throws InputError naming the file and field.
  static std::filesystem::path importKernelTunerCache(const std::filesystem::path& cacheFile,
                                                      const std::filesystem::path& outputDir);

  // A live run: the model restarts empty with the space's parameters.
  void beginLiveRun(const TuneRequest& request);
  // After a live run: rereads metadata and results (not the trials, which are all shown).
  void finishLiveRun();

  enum class ExportFormat { TrialsCsv, RunJson };
  // Writes the run's export to `file` off the UI thread; emits exported() or failed().
  void exportTo(ExportFormat format, const QString& file);

 signals:
  void opened();
  void resultsChanged();
  void exported(const QString& file);
  void failed(const QString& message);

 private:
  struct Outcome {
    std::optional<LoadedRun> run;
    QString error;
  };
  TrialsModel* trials_;
  std::filesystem::path dir_;
  std::optional<RunMetadata> metadata_;
  std::optional<RunResults> results_;
  QFutureWatcher<Outcome> loader_;
  QFutureWatcher<QString> exporter_;  // error text, empty on success
  QString exportFile_;
  bool onlyResults_ = false;
};

}  // namespace ktune::gui
