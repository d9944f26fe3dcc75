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
#include <memory>
#include <vector>

#include "ktune/tuner.h"
#include "ktune/widgets/qt_types.h"

namespace ktune::gui {

class TuneWorker : public QObject, private TuneObserver {
  Q_OBJECT
 public:
  TuneWorker(Backend& backend, DeviceInfo device);
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

  std::unique_ptr<Tuner> tuner_;
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
