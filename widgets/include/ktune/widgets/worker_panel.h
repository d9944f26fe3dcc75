#pragma once
// WorkerPanel: the Setup page's "external worker" backend. A command line starts any program
// that speaks the worker protocol (docs/worker-protocol.md): `python3 examples/workers/numpy_matmul.py`,
// `ssh gpu1 ktune worker --backend cuda`. The panel shows what the worker's hello offers and
// hands the connected worker to the page as its backend; the run then measures through it, as
// `ktune tune --worker "CMD"` does.
//
// Connecting happens on the thread pool: a Python worker importing a GPU stack, or one behind
// ssh, takes seconds to say hello. The panel reports it as connecting / connected / failed.
//
// A command read from a file (a session, a run folder) is anyone's: it starts only once the user
// has seen it whole and said yes (FileCommands::Ask, a dialog), or when the user said beforehand
// that they trust such commands (Trust: --trust-worker-command). A typed command starts on Connect.
//
// A command runs in a folder, shown under it and in the dialog: the one recorded with it (a run's
// worker runs where the run was made, so that its relative paths name the same files), else the
// workbench's. A recorded folder that no longer exists is said so, never silently replaced.
#include <QFutureWatcher>
#include <QWidget>
#include <functional>
#include <memory>

#include "ktune/worker_client.h"

class QLabel;
class QLineEdit;
class QPushButton;

namespace ktune::gui {

// A worker that could not be started in `folder` or spoke another protocol: what happened and
// what to do.
QString describeWorkerFailure(const QString& command, const QString& error, const QString& folder);

// `command` as the confirmation shows it: control and invisible formatting characters (a bidi
// override that reverses what follows) written as \u{XXXX}.
QString visibleCommand(const QString& command);

// What starting a command read from a file takes: the user's yes in a dialog that shows it (Ask),
// nothing (Trust), or it is not started at all (Refuse: no one is there to answer, --screenshot).
enum class FileCommands { Ask, Trust, Refuse };

class WorkerPanel : public QWidget {
  Q_OBJECT
 public:
  // Asks the user whether to start `command`, read from `origin`; true: start it.
  using Confirmation = std::function<bool(const QString& command, const QString& origin)>;

  explicit WorkerPanel(QWidget* parent = nullptr);
  ~WorkerPanel() override;

  QString command() const;
  // A command as typed by the user: Connect starts it, in `folder` (empty: the workbench's).
  void setCommand(const QString& command, const QString& folder = {});
  // A command read from `origin` ("the session file /x/s.json"), recorded as run in `folder`
  // (empty: not recorded): filled in, started by connectWorker() only as fileCommands() says.
  void setCommandFromFile(const QString& command, const QString& origin, const QString& folder = {});
  // The absolute folder Connect starts the command in: the recorded one where it exists, else
  // the workbench's.
  QString workingDirectory() const;
  // That folder when it is not the workbench's, for the session that records it; else empty.
  QString otherFolder() const;
  // What the line under the command says about the folder (plain text, as the dialog says it).
  QString folderText() const;
  // The command came from a file and the user has not said yes to it yet.
  bool awaitsConfirmation() const;
  QString commandOrigin() const { return origin_; }
  void setFileCommands(FileCommands policy) { fileCommands_ = policy; }
  FileCommands fileCommands() const { return fileCommands_; }
  // Replaces the dialog Ask shows (tests answer it without a screen).
  void setConfirmation(Confirmation confirm) { confirm_ = std::move(confirm); }
  // Starts the command's worker and reads its hello. A previous worker is let go at once. A
  // command from a file that the user declines (or that Refuse keeps) is not started: declined().
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
  // A command from a file was not started: the user said no, or no one could be asked.
  void declined(const QString& message);

 private:
  void onFinished();
  void showHello();
  void setStatus(const QString& html, bool error);
  // Whether `cmd` may start now; asks when the policy says so, says why not when it may not.
  bool mayStart(const QString& cmd);
  bool askInDialog(const QString& command, const QString& origin);
  void showFolder();

  QLineEdit* command_;
  QPushButton* connect_;
  QLabel* folder_;
  QLabel* status_;
  std::shared_ptr<worker::WorkerBackend> backend_;
  struct Attempt {
    std::shared_ptr<worker::WorkerBackend> backend;
    QString error;
  };
  QFutureWatcher<Attempt>* watcher_ = nullptr;
  QString attempted_;
  QString attemptedFolder_;
  double helloTimeoutS_ = 120;
  QString origin_;     // the file the command came from; empty: typed
  QString confirmed_;  // the file's command the user said yes to
  QString recorded_;   // the folder set with the command; empty: the workbench's
  FileCommands fileCommands_ = FileCommands::Ask;
  Confirmation confirm_;
};

}  // namespace ktune::gui
