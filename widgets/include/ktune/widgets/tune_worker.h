#pragma once
// Runs the core's Tuner in a QThread and hands its value-type events to the GUI.
//
// TuneWorker lives in the worker thread. Its observer queues every core event and emits
// dataAvailable() once per non-empty queue, so however fast trials finish there is at most one
// pending signal. RunController, on the GUI thread, drains the queue on a timer at no more than
// kMaxUpdatesPerSecond and re-emits the batch as typed signals for models and pages.
#include <QElapsedTimer>
#include <QList>
#include <QMutex>
#include <QObject>
#include <QThread>
#include <QTimer>
#include <atomic>
#include <memory>
#include <optional>
#include <vector>

#include "ktune/tuner.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/worker_client.h"

namespace ktune::gui {

// What a run measures with. `backend` is shared so that an external worker outlives a reconnect
// on the Setup page while a run still uses it. With `isolate` set, the run measures in that worker
// process instead (`ktune worker` serving `device` of `backend`, as `ktune tune --isolate` does):
// it is started on the tuner's thread, and a config that crashes or hangs kills only it.
struct RunTarget {
  std::shared_ptr<Backend> backend;
  DeviceInfo device;
  std::optional<worker::WorkerOptions> isolate;
};

class TuneWorker : public QObject, private TuneObserver {
  Q_OBJECT
 public:
  explicit TuneWorker(RunTarget target);
  ~TuneWorker() override;

  // Thread-safe: called from the GUI thread while run() blocks the worker thread.
  void cancel();
  void setPaused(bool paused);
  // Events queued since the last call, oldest first. Thread-safe.
  std::vector<TuneEvent> takeEvents();

 public slots:
  void run(const ktune::TuneRequest& request);

 signals:
  void started();
  void dataAvailable();
  void finished(const ktune::RunSummary& summary);
  void failed(const QString& message);

 private:
  void on_event(const TuneEvent& e) override;
  // The isolated worker and the device it serves; throws RunError when it does not start.
  void startIsolatedWorker(TuneRequest& request);

  RunTarget target_;
  std::unique_ptr<Backend> isolated_;
  // The tuner exists only while run() runs; cancel and pause before then are remembered.
  QMutex tunerMutex_;
  std::unique_ptr<Tuner> tuner_;
  bool cancelled_ = false;
  bool paused_ = false;
  QMutex mutex_;
  std::vector<TuneEvent> queue_;
};

class RunController : public QObject {
  Q_OBJECT
 public:
  static constexpr int kMaxUpdatesPerSecond = 30;

  explicit RunController(QObject* parent = nullptr);
  ~RunController() override;

  bool isRunning() const { return worker_ != nullptr; }
  bool isPaused() const { return paused_; }
  // Starts a run on its own thread; throws InputError when one is already running.
  void start(RunTarget target, const TuneRequest& request);
  void start(Backend& backend, const DeviceInfo& device, const TuneRequest& request);
  void setPaused(bool paused);
  void stop();
  // Blocks until the worker thread has ended (tests, application exit).
  void waitForFinished();
  int updatesDelivered() const { return updates_; }

 signals:
  void runStarted(const ktune::event::RunStarted& info);
  void problemStarted(const ktune::event::ProblemStarted& info);
  void trialsAvailable(const QList<ktune::Trial>& batch);
  void progress(const ktune::event::Progress& progress);
  void problemFinished(const ktune::ProblemResult& result);
  void logMessage(const QString& message);
  void pausedChanged(bool paused);
  void finished(const ktune::RunSummary& summary);
  void failed(const QString& message);

 private:
  void scheduleFlush();
  void flush();
  void endRun();

  QThread* thread_ = nullptr;
  TuneWorker* worker_ = nullptr;
  QTimer flushTimer_;
  QElapsedTimer sinceFlush_;
  bool paused_ = false;
  int updates_ = 0;
};

}  // namespace ktune::gui
