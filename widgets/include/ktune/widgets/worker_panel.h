#pragma once
// WorkerPanel: the Setup page's "external worker" backend. A command line starts any program
// that speaks the worker protocol (docs/worker-protocol.md): `python3 examples/workers/numpy_matmul.py`,
// `ssh gpu1 ktune worker --backend cuda`. The panel shows what the worker's hello offers and
// hands the connected worker to the page as its backend; the run then measures through it, as
// `ktune tune --worker "CMD"` does.
//
// Connecting happens on the thread pool: a Python worker importing a GPU stack, or one behind
// ssh, takes seconds to say hello. The panel reports it as connecting / connected / failed.
#include <QFutureWatcher>
#include <QWidget>
#include <memory>

#include "ktune/worker_client.h"

class QLabel;
class QLineEdit;
class QPushButton;

namespace ktune::gui {

// A worker that could not be started or spoke another protocol: what happened and what to do.
QString describeWorkerFailure(const QString& command, const QString& error);

class WorkerPanel : public QWidget {
  Q_OBJECT
 public:
  explicit WorkerPanel(QWidget* parent = nullptr);
  ~WorkerPanel() override;

  QString command() const;
  void setCommand(const QString& command);
  // Starts the command's worker and reads its hello. A previous worker is let go at once.
  void connectWorker();
  bool isConnecting() const { return watcher_ != nullptr; }
  // The connected worker, or null. Shared: a run keeps it alive while the user reconnects.
  std::shared_ptr<worker::WorkerBackend> backend() const { return backend_; }
  // What the status line says (tests, the page's error messages).
  QString statusText() const;
  // Seconds a worker has to say hello (WorkerOptions::hello_timeout_s); tests shorten it.
  void setHelloTimeout(double seconds) { helloTimeoutS_ = seconds; }

 signals:
  void connecting(const QString& command);
  void connected();
  void failed(const QString& message);

 private:
  void onFinished();
  void showHello();
  void setStatus(const QString& html, bool error);

  QLineEdit* command_;
  QPushButton* connect_;
  QLabel* status_;
  std::shared_ptr<worker::WorkerBackend> backend_;
  struct Attempt {
    std::shared_ptr<worker::WorkerBackend> backend;
    QString error;
  };
  QFutureWatcher<Attempt>* watcher_ = nullptr;
  QString attempted_;
  double helloTimeoutS_ = 120;
};

}  // namespace ktune::gui
