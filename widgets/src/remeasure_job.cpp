#include "ktune/widgets/remeasure_job.h"

#include <QtConcurrent/QtConcurrentRun>

#include "ktune/error.h"
#include "ktune/judge.h"
#include "ktune/widgets/qt_types.h"

namespace ktune::gui {

RemeasureJob::RemeasureJob(QObject* parent) : QObject(parent) {
  connect(&watcher_, &QFutureWatcher<QString>::finished, this, [this] {
    const QString error = watcher_.result();
    if (error.isEmpty())
      emit finished();
    else
      emit failed(error);
  });
}

RemeasureJob::~RemeasureJob() {
  stop();
  watcher_.waitForFinished();
}

void RemeasureJob::start(const std::vector<std::unique_ptr<Backend>>& backends, RunResults run, RunMetadata metadata,
                         QString registryRoot) {
  if (isRunning()) return;
  verdicts_.clear();
  stop_ = std::make_shared<std::atomic<bool>>(false);
  emit started();
  auto stop = stop_;
  watcher_.setFuture(QtConcurrent::run([this, &backends, stop, run = std::move(run), metadata = std::move(metadata),
                                        root = sstr(registryRoot)]() -> QString {
    const auto report = [this, stop](const PairedVerdict& v, std::size_t done, std::size_t total) {
      QMetaObject::invokeMethod(
          this,
          [this, key = qstr(v.key), done, total] {
            emit progress(key, static_cast<int>(done), static_cast<int>(total));
          },
          Qt::QueuedConnection);
      return !stop->load();
    };
    try {
      // Written by this thread only; read by the GUI once the watcher reports finished.
      verdicts_ = judge_run(run, metadata, root, backends, report);
      return {};
    } catch (const std::exception& e) {
      return QString::fromUtf8(e.what());
    }
  }));
}

void RemeasureJob::stop() {
  if (stop_) stop_->store(true);
}

}  // namespace ktune::gui
