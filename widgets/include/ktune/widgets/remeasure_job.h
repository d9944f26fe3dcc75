#pragma once
// Re-measure on the Apply page: for each key whose registry config differs from the run's, both
// are timed side by side in alternation on the run's device (judge_run), off the GUI thread so
// the page stays live. Signals say started, each key judged (progress), finished (verdicts()
// holds them) or failed, with a message the user can act on. stop() ends it after the key being
// timed; the keys judged so far still count.
#include <QFutureWatcher>
#include <QObject>
#include <QString>
#include <atomic>
#include <memory>
#include <vector>

#include "ktune/backend.h"
#include "ktune/diff.h"
#include "ktune/run_store.h"

namespace ktune::gui {

class RemeasureJob : public QObject {
  Q_OBJECT
 public:
  explicit RemeasureJob(QObject* parent = nullptr);
  ~RemeasureJob() override;  // stops and waits: the backends must outlive the job's thread

  // `backends` must outlive the job. Ignored while a job is running.
  void start(const std::vector<std::unique_ptr<Backend>>& backends, RunResults run, RunMetadata metadata,
             QString registryRoot);
  void stop();
  bool isRunning() const { return watcher_.isRunning(); }
  const std::vector<PairedVerdict>& verdicts() const { return verdicts_; }

 signals:
  void started();
  void progress(const QString& key, int done, int total);
  void finished();
  void failed(const QString& message);

 private:
  QFutureWatcher<QString> watcher_;  // the error message; empty on success
  std::vector<PairedVerdict> verdicts_;
  std::shared_ptr<std::atomic<bool>> stop_;
};

}  // namespace ktune::gui
