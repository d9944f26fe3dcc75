#include "ktune/widgets/worker_panel.h"

#include <QDir>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "ktune/widgets/qt_types.h"

namespace ktune::gui {

QString describeWorkerFailure(const QString& command, const QString& error, const QString& folder) {
  QString hint;
  if (error.contains(QLatin1String("protocol")))
    hint = QObject::tr(
        "The worker and this ktune speak different protocol versions: use the ktune_worker "
        "package (python/ktune_worker) or the `ktune worker` of this ktune's version.");
  else if (error.contains(QLatin1String("ModuleNotFoundError")) || error.contains(QLatin1String("ImportError")))
    hint = QObject::tr(
        "The worker's Python lacks a module: install it for the interpreter the command runs "
        "(`python3` is the first one on PATH), or name one that has it, e.g. /usr/bin/python3.");
  else if (error.contains(QLatin1String("code 127")) || error.contains(QLatin1String("not found")))
    hint = QObject::tr("The shell could not find the program: check its spelling and that it is on PATH.");
  else if (error.contains(QLatin1String("code 2")) && error.contains(QLatin1String("No such file")))
    hint = QObject::tr("A file in the command does not exist: relative paths start from %1.").arg(folder);
  else if (error.contains(QLatin1String("sent no hello")))
    hint = QObject::tr(
        "Is it a ktune worker? A worker answers ktune's hello on stdin at once "
        "(docs/worker-protocol.md); run the command in a terminal to see what it does.");
  else
    hint = QObject::tr(
        "Run the command in a terminal to see what it does; a worker speaks docs/worker-protocol.md "
        "on stdin and stdout.");
  return QObject::tr("The worker `%1` could not be used: %2\n\n%3").arg(command, error, hint);
}

// `command` with control and invisible formatting characters (bidi overrides, zero-width
// spaces) written as escapes: what the dialog shows is what /bin/sh gets, with nothing hidden.
QString visibleCommand(const QString& command) {
  QString out;
  for (const QChar c : command) {
    if (c.category() == QChar::Other_Control || c.category() == QChar::Other_Format)
      out += QStringLiteral("\\u{%1}").arg(c.unicode(), 4, 16, QLatin1Char('0'));
    else
      out += c;
  }
  return out;
}

namespace {

bool recordedFolderExists(const QString& folder) { return !folder.isEmpty() && QFileInfo(folder).isDir(); }

}  // namespace

WorkerPanel::WorkerPanel(QWidget* parent) : QWidget(parent) {
  command_ = new QLineEdit;
  command_->setObjectName(QStringLiteral("workerCommand"));
  command_->setPlaceholderText(tr("python3 examples/workers/numpy_matmul.py"));
  command_->setToolTip(
      tr("A program that speaks the worker protocol (docs/worker-protocol.md), run through /bin/sh "
         "in the folder named below. Examples:\n  python3 examples/workers/numpy_matmul.py\n"
         "  ssh gpu1 ktune worker --backend cuda"));
  connect_ = new QPushButton(tr("Connect"));
  connect_->setObjectName(QStringLiteral("workerConnect"));
  folder_ = new QLabel;
  folder_->setObjectName(QStringLiteral("workerFolder"));
  folder_->setWordWrap(true);
  folder_->setTextFormat(Qt::PlainText);
  folder_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  status_ = new QLabel(tr("Type the worker's command and press Connect: it is started and asked what it offers."));
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* row = new QHBoxLayout;
  row->setContentsMargins(0, 0, 0, 0);
  row->addWidget(command_, 1);
  row->addWidget(connect_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(row);
  layout->addWidget(folder_);
  layout->addWidget(status_);
  showFolder();
  connect(connect_, &QPushButton::clicked, this, &WorkerPanel::connectWorker);
  connect(command_, &QLineEdit::returnPressed, this, &WorkerPanel::connectWorker);
}

WorkerPanel::~WorkerPanel() {
  // A hello still on its way is dropped with the watcher; its worker is shut down when the
  // pool thread lets go of it.
  if (watcher_) watcher_->disconnect(this);
}

QString WorkerPanel::command() const { return command_->text().trimmed(); }

void WorkerPanel::setCommand(const QString& command, const QString& folder) {
  command_->setText(command);
  origin_.clear();
  recorded_ = folder;
  showFolder();
}

void WorkerPanel::setCommandFromFile(const QString& command, const QString& origin, const QString& folder) {
  command_->setText(command);
  origin_ = origin;
  confirmed_.clear();
  recorded_ = folder;
  showFolder();
  setStatus(tr("The worker command from %1 is filled in, not started: press Connect to review it and start it.")
                .arg(origin.toHtmlEscaped()),
            false);
}

// Edits of a file's command keep asking: the part the user did not look at may be what matters.
bool WorkerPanel::awaitsConfirmation() const { return !origin_.isEmpty() && command() != confirmed_; }

bool WorkerPanel::askInDialog(const QString& command, const QString& origin) {
  QMessageBox box(QMessageBox::Warning, tr("Start this worker?"), {}, QMessageBox::NoButton, this);
  box.setObjectName(QStringLiteral("workerConfirmation"));
  // Plain text: the command is shown as it will run, never as markup that could hide part of it.
  box.setTextFormat(Qt::PlainText);
  box.setTextInteractionFlags(Qt::TextSelectableByMouse);
  box.setText(tr("This command comes from %1, not from you:\n\n%2\n\n%3\n\nStarting it runs it through /bin/sh "
                 "with your permissions. Start it only if you trust where it came from.")
                  .arg(origin, visibleCommand(command), folderText()));
  QPushButton* start = box.addButton(tr("Start worker"), QMessageBox::AcceptRole);
  QPushButton* cancel = box.addButton(QMessageBox::Cancel);
  box.setDefaultButton(cancel);
  box.setEscapeButton(cancel);
  box.exec();
  return box.clickedButton() == start;
}

bool WorkerPanel::mayStart(const QString& cmd) {
  if (!awaitsConfirmation()) return true;
  QString why;
  if (fileCommands_ == FileCommands::Trust)
    confirmed_ = cmd;
  else if (fileCommands_ == FileCommands::Refuse)
    why = tr("Not started: the worker command `%1` comes from %2, and there is no one to ask "
             "(ktune-workbench --trust-worker-command starts such commands without asking).")
              .arg(cmd, origin_);
  else if (confirm_ ? confirm_(cmd, origin_) : askInDialog(cmd, origin_))
    confirmed_ = cmd;
  else
    why = tr("Not started: you did not confirm the worker command from %1. Press Connect to review it again.")
              .arg(origin_);
  if (why.isEmpty()) return true;
  setStatus(why.toHtmlEscaped(), true);
  emit declined(why);
  return false;
}
QString WorkerPanel::statusText() const { return status_->text(); }

QString WorkerPanel::workingDirectory() const {
  return recordedFolderExists(recorded_) ? QDir(recorded_).absolutePath() : QDir::currentPath();
}

QString WorkerPanel::otherFolder() const {
  const QString folder = workingDirectory();
  return QFileInfo(folder) == QFileInfo(QDir::currentPath()) ? QString() : folder;
}

QString WorkerPanel::folderText() const {
  const QString here = QDir::currentPath();
  if (recorded_.isEmpty() || QFileInfo(recorded_) == QFileInfo(here))
    return tr("Runs in %1 (the workbench's folder): relative paths in the command start there.").arg(here);
  if (recordedFolderExists(recorded_))
    return tr("Runs in %1, the folder it was recorded in: relative paths in the command start there.")
        .arg(workingDirectory());
  return tr("Runs in %1 (the workbench's folder), not in %2, where it was recorded: that folder no longer exists. "
            "Start the workbench from the folder the command needs, or edit the command to give its paths absolute.")
      .arg(here, recorded_);
}

// Plain text (folder names are shown as they are); red when the recorded folder is gone.
void WorkerPanel::showFolder() {
  showStatus(folder_, folderText(), !recorded_.isEmpty() && !recordedFolderExists(recorded_));
}

void WorkerPanel::setStatus(const QString& html, bool error) { showStatus(status_, html, error); }

void WorkerPanel::connectWorker() {
  const QString cmd = command();
  if (cmd.isEmpty()) {
    setStatus(tr("No command: type the worker's command line, e.g. python3 examples/workers/numpy_matmul.py"), true);
    emit failed(statusText());
    return;
  }
  showFolder();  // a recorded folder may have gone since it was shown
  if (!mayStart(cmd)) return;
  if (watcher_) {
    watcher_->disconnect(this);
    watcher_->deleteLater();
  }
  backend_.reset();  // the old worker shuts down unless a run still holds it
  attempted_ = cmd;
  attemptedFolder_ = workingDirectory();
  setStatus(tr("Starting `%1` and waiting for its hello…").arg(cmd.toHtmlEscaped()), false);
  worker::WorkerOptions options;
  options.argv = worker::shell_command(sstr(cmd));
  options.working_directory = sstr(attemptedFolder_);
  options.hello_timeout_s = helloTimeoutS_;
  watcher_ = new QFutureWatcher<Attempt>(this);
  connect(watcher_, &QFutureWatcher<Attempt>::finished, this, &WorkerPanel::onFinished);
  watcher_->setFuture(QtConcurrent::run([options] {
    Attempt a;
    try {
      a.backend = std::make_shared<worker::WorkerBackend>(options);
    } catch (const std::exception& e) {
      a.error = QString::fromUtf8(e.what());
    }
    return a;
  }));
  emit connecting(cmd);
}

void WorkerPanel::onFinished() {
  Attempt a = watcher_->result();
  watcher_->deleteLater();
  watcher_ = nullptr;
  if (!a.backend) {
    const QString message = describeWorkerFailure(attempted_, a.error, attemptedFolder_);
    setStatus(message.toHtmlEscaped().replace(QLatin1Char('\n'), QStringLiteral("<br>")), true);
    emit failed(message);
    return;
  }
  backend_ = std::move(a.backend);
  showHello();
  emit connected();
}

void WorkerPanel::showHello() {
  const worker::Hello& h = backend_->hello();
  const auto plural = [](std::size_t n, const QString& one, const QString& many) {
    return QStringLiteral("%1 %2").arg(n).arg(n == 1 ? one : many);
  };
  QStringList families;
  for (const worker::OfferedFamily& f : h.families) {
    QStringList keys, params;
    for (const KeyField& k : f.family.key_fields) keys << qstr(k.name);
    for (const Parameter& p : f.family.default_space.parameters()) params << qstr(p.name);
    const QString space =
        f.has_space ? tr("space %1; %2")
                          .arg(params.join(QStringLiteral(", ")),
                               plural(f.family.default_space.constraints().size(), tr("constraint"), tr("constraints")))
                    : tr("no space of its own: load one under Search space");
    families << tr("<b>%1</b> (key %2; %3)")
                    .arg(qstr(f.family.name).toHtmlEscaped(), keys.join(QStringLiteral(", ")).toHtmlEscaped(),
                         space.toHtmlEscaped());
  }
  QStringList versions;
  for (const auto& [name, version] : h.versions)
    versions << QStringLiteral("%1 %2").arg(qstr(name), qstr(version)).toHtmlEscaped();
  QString text = tr("Connected to <b>%1</b>: protocol %2, backend <b>%3</b>, pid %4")
                     .arg(qstr(h.worker).toHtmlEscaped())
                     .arg(h.protocol)
                     .arg(qstr(h.backend).toHtmlEscaped())
                     .arg(backend_->current_pid());
  text += QStringLiteral("<br>") + plural(h.devices.size(), tr("device"), tr("devices")) + QStringLiteral("; ") +
          (families.size() == 1 ? tr("family ") : tr("families: ")) + families.join(QStringLiteral("; "));
  if (!versions.isEmpty()) text += QStringLiteral("<br><small>%1</small>").arg(versions.join(QStringLiteral(", ")));
  setStatus(text, false);
}

}  // namespace ktune::gui
