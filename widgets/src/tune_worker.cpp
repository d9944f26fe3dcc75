#include "ktune/widgets/tune_worker.h"

#include <QMutexLocker>

#include "ktune/error.h"

namespace ktune::gui {

TuneWorker::TuneWorker(RunTarget target) : target_(std::move(target)) {}

TuneWorker::~TuneWorker() = default;

void TuneWorker::cancel() {
  QMutexLocker lock(&tunerMutex_);
  cancelled_ = true;
  if (tuner_) tuner_->cancel();
}

void TuneWorker::setPaused(bool paused) {
  QMutexLocker lock(&tunerMutex_);
  paused_ = paused;
  if (tuner_) tuner_->set_paused(paused);
}

void TuneWorker::startIsolatedWorker(TuneRequest& request) {
  on_event(event::Log{"starting the worker process: " + target_.isolate->argv.front() + " ..."});
  auto w = std::make_unique<worker::WorkerBackend>(*target_.isolate);
  const auto devices = w->devices();
  if (devices.empty()) throw RunError("the isolated worker offers no device");
  // The worker serves one device; its family (by name) is the one it measures.
  target_.device = devices.front();
  for (const KernelFamily& f : w->families())
    if (f.name == request.family.name) request.family = f;
  isolated_ = std::move(w);
}

std::vector<TuneEvent> TuneWorker::takeEvents() {
  QMutexLocker lock(&mutex_);
  return std::exchange(queue_, {});
}

void TuneWorker::on_event(const TuneEvent& e) {
  bool wasEmpty;
  {
    QMutexLocker lock(&mutex_);
    wasEmpty = queue_.empty();
    queue_.push_back(e);
  }
  if (wasEmpty) emit dataAvailable();
}

void TuneWorker::run(const TuneRequest& given) {
  emit started();
  try {
    TuneRequest request = given;
    if (target_.isolate) {
      try {
        startIsolatedWorker(request);
      } catch (const std::exception& e) {
        emit failed(tr("The worker process for isolation could not start: %1\nUntick \"Isolate\" on the Setup page to "
                       "measure in the workbench's own process.")
                        .arg(QString::fromUtf8(e.what())));
        return;
      }
    }
    {
      QMutexLocker lock(&tunerMutex_);
      tuner_ = std::make_unique<Tuner>(isolated_ ? *isolated_ : *target_.backend, target_.device);
      if (cancelled_) tuner_->cancel();
      if (paused_) tuner_->set_paused(true);
    }
    RunSummary summary = tuner_->run(request, *this);
    emit finished(summary);
  } catch (const InputError& e) {
    emit failed(
        tr("The run could not start: %1\nFix the setup and press Start again.").arg(QString::fromUtf8(e.what())));
  } catch (const RunError& e) {
    emit failed(tr("The run stopped: %1\nTrials measured so far are kept in the run folder; resume it from "
                   "File → Resume Run once the cause is fixed.")
                    .arg(QString::fromUtf8(e.what())));
  } catch (const std::exception& e) {
    emit failed(tr("The run stopped on an unexpected error: %1").arg(QString::fromUtf8(e.what())));
  }
}

RunController::RunController(QObject* parent) : QObject(parent) {
  flushTimer_.setSingleShot(true);
  connect(&flushTimer_, &QTimer::timeout, this, &RunController::flush);
  sinceFlush_.start();
}

RunController::~RunController() {
  stop();
  waitForFinished();
  delete worker_;  // its thread has ended; the thread itself is our child
}

void RunController::start(Backend& backend, const DeviceInfo& device, const TuneRequest& request) {
  // The built-in backends live as long as the application: shared without ownership.
  start(RunTarget{std::shared_ptr<Backend>(std::shared_ptr<Backend>(), &backend), device, std::nullopt}, request);
}

void RunController::start(RunTarget target, const TuneRequest& request) {
  if (worker_) throw InputError("A run is already in progress: stop it before starting another one.");
  thread_ = new QThread(this);
  thread_->setObjectName(QStringLiteral("ktune-tuner"));
  worker_ = new TuneWorker(std::move(target));
  worker_->moveToThread(thread_);
  connect(worker_, &TuneWorker::dataAvailable, this, &RunController::scheduleFlush);
  connect(worker_, &TuneWorker::finished, this, [this](const RunSummary& summary) {
    flush();
    endRun();
    emit finished(summary);
  });
  connect(worker_, &TuneWorker::failed, this, [this](const QString& message) {
    flush();
    endRun();
    emit failed(message);
  });
  // The thread ends as soon as run() returns, so waitForFinished() (closing the window, the
  // destructor) can join it without the GUI thread's event loop.
  connect(worker_, &TuneWorker::finished, thread_, &QThread::quit, Qt::DirectConnection);
  connect(worker_, &TuneWorker::failed, thread_, &QThread::quit, Qt::DirectConnection);
  paused_ = false;
  updates_ = 0;
  thread_->start();
  QMetaObject::invokeMethod(
      worker_, [w = worker_, request] { w->run(request); }, Qt::QueuedConnection);
}

void RunController::setPaused(bool paused) {
  if (!worker_ || paused == paused_) return;
  paused_ = paused;
  worker_->setPaused(paused);
  emit pausedChanged(paused);
}

void RunController::stop() {
  if (!worker_) return;
  // A paused tuner must wake up to notice the cancel.
  worker_->setPaused(false);
  worker_->cancel();
}

void RunController::waitForFinished() {
  if (thread_) thread_->wait();
}

void RunController::endRun() {
  thread_->quit();
  thread_->wait();
  // Deleted here, not by the thread's finished(): the queued finished()/failed() handlers still
  // drain its event queue after the thread has ended.
  delete std::exchange(worker_, nullptr);
  thread_->deleteLater();
  thread_ = nullptr;
  if (paused_) {
    paused_ = false;
    emit pausedChanged(false);
  }
}

void RunController::scheduleFlush() {
  if (flushTimer_.isActive()) return;
  const qint64 minInterval = 1000 / kMaxUpdatesPerSecond;
  flushTimer_.start(static_cast<int>(std::max<qint64>(0, minInterval - sinceFlush_.elapsed())));
}

void RunController::flush() {
  flushTimer_.stop();
  if (!worker_) return;
  std::vector<TuneEvent> events = worker_->takeEvents();
  if (events.empty()) return;
  sinceFlush_.restart();
  ++updates_;
  QList<Trial> batch;
  std::optional<event::Progress> lastProgress;
  // Trials go out in one batch, but problem boundaries must stay ordered around them.
  const auto sendBatch = [&] {
    if (!batch.isEmpty()) emit trialsAvailable(std::exchange(batch, {}));
  };
  for (auto& e : events) {
    std::visit(
        [&](auto& ev) {
          using T = std::decay_t<decltype(ev)>;
          if constexpr (std::is_same_v<T, event::TrialFinished>) {
            batch.append(std::move(ev.trial));
          } else if constexpr (std::is_same_v<T, event::Progress>) {
            lastProgress = ev;
          } else if constexpr (std::is_same_v<T, event::RunStarted>) {
            emit runStarted(ev);
          } else if constexpr (std::is_same_v<T, event::ProblemStarted>) {
            sendBatch();
            emit problemStarted(ev);
          } else if constexpr (std::is_same_v<T, event::ProblemFinished>) {
            sendBatch();
            emit problemFinished(ev.result);
          } else if constexpr (std::is_same_v<T, event::Log>) {
            emit logMessage(qstr(ev.message));
          } else if constexpr (std::is_same_v<T, event::RunFailed>) {
            emit logMessage(qstr(ev.message));
          }
          // TrialStarted and RunFinished: the batch and finished() already say it.
        },
        e);
  }
  sendBatch();
  if (lastProgress) emit progress(*lastProgress);
}

}  // namespace ktune::gui
