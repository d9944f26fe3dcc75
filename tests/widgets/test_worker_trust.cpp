// A file is not a script: a session file or a run folder that names a worker command fills it
// in and starts nothing until the user has seen the whole command and said yes (a dialog), or
// said beforehand that they trust such commands (--trust-worker-command). The worker here is
// `touch PWNED`: the file appears exactly when the command ran.
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QLineEdit>
#include <QMessageBox>
#include <QProcess>
#include <QPushButton>
#include <QSignalSpy>
#include <QTimer>
#include <QtTest>

#include "ktune/backends.h"
#include "ktune/error.h"
#include "ktune/run_store.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/session.h"
#include "ktune/widgets/setup_page.h"
#include "ktune/widgets/worker_panel.h"
#include "run_fixture.h"

using namespace ktune;
using namespace ktune::gui;

namespace {

// Answers the next modal message box once it shows: records its text and format, then presses
// "Start worker" (accept) or Cancel.
struct DialogAnswer {
  QString text;
  Qt::TextFormat format = Qt::AutoText;
  bool shown = false;
};
void answerNextDialog(bool accept, DialogAnswer* seen) {
  auto* poll = new QTimer;
  poll->setInterval(10);
  QObject::connect(poll, &QTimer::timeout, [poll, accept, seen] {
    auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
    if (!box) return;
    poll->stop();
    poll->deleteLater();
    seen->shown = true;
    seen->text = box->text();
    seen->format = box->textFormat();
    for (QAbstractButton* b : box->buttons())
      if ((box->buttonRole(b) == QMessageBox::AcceptRole) == accept) return b->click();
  });
  poll->start();
}

QString workbench() { return qEnvironmentVariable("KTUNE_WORKBENCH"); }

}  // namespace

class TestWorkerTrust : public QObject {
  Q_OBJECT

  std::vector<std::unique_ptr<Backend>> backends_;
  QTemporaryDir tmp_;
  QString pwned_, command_, sessionFile_;

  // Whether the command ran within a while (a started shell needs a moment).
  bool ran(int waitMs = 1500) {
    return QTest::qWaitFor([&] { return QFile::exists(pwned_); }, waitMs);
  }

 private slots:
  void initTestCase() {
    initialize();
    backends_ = make_backends();
    QVERIFY(tmp_.isValid());
    pwned_ = tmp_.filePath(QStringLiteral("PWNED"));
    command_ = QStringLiteral("touch %1; echo not a worker").arg(pwned_);
    Session s;
    s.worker = sstr(command_);
    sessionFile_ = tmp_.filePath(QStringLiteral("session.json"));
    s.save(sstr(sessionFile_));
  }
  void init() { QFile::remove(pwned_); }

  // Loading asks, showing the whole command as plain text; Cancel starts nothing and Start then
  // says why; Connect asks again, and yes runs it.
  void loadingASessionAsksFirst() {
    SetupPage page(backends_);
    DialogAnswer no;
    answerNextDialog(false, &no);
    page.loadSessionFrom(sessionFile_);
    QVERIFY2(no.shown, "loading a session with a worker command showed no confirmation");
    QVERIFY2(no.text.contains(command_) && no.text.contains(sessionFile_), qPrintable(no.text));
    // Where it would run: the session names no folder, so the workbench's.
    QVERIFY2(no.text.contains(QStringLiteral("Runs in %1 (the workbench's folder)").arg(QDir::currentPath())),
             qPrintable(no.text));
    QCOMPARE(no.format, Qt::PlainText);
    QVERIFY2(!ran(), "the session's worker command ran although the user said no");
    QVERIFY(page.isExternalWorker());
    QCOMPARE(page.workerPanel()->command(), command_);
    QVERIFY(!page.workerPanel()->isConnecting());
    QVERIFY2(page.workerPanel()->statusText().contains(QLatin1String("Not started")),
             qPrintable(page.workerPanel()->statusText()));
    try {
      page.request();
      QFAIL("a request with an unconfirmed worker command");
    } catch (const InputError& e) {
      QVERIFY2(QString::fromUtf8(e.what()).contains(QLatin1String("press Connect")) &&
                   QString::fromUtf8(e.what()).contains(QLatin1String("--trust-worker-command")),
               e.what());
    }

    DialogAnswer yes;
    answerNextDialog(true, &yes);
    QSignalSpy failed(page.workerPanel(), &WorkerPanel::failed);
    page.findChild<QPushButton*>(QStringLiteral("workerConnect"))->click();
    QVERIFY(yes.shown && yes.text.contains(command_));
    QVERIFY2(ran(), "the confirmed command did not run");
    // `touch` is no worker; what matters is that it ran once asked.
    QTRY_VERIFY_WITH_TIMEOUT(!failed.isEmpty(), 30000);
  }

  // What the dialog shows is what the shell gets: nothing in the command can hide the rest.
  void invisibleCharactersAreShown() {
    const QString rlo = QString(QChar(0x202E));
    QCOMPARE(visibleCommand(QStringLiteral("python3 w.py") + rlo + QStringLiteral("txt.sh")),
             QStringLiteral("python3 w.py\\u{202e}txt.sh"));
    QCOMPARE(visibleCommand(QStringLiteral("a\rb\nc")), QStringLiteral("a\\u{000d}b\\u{000a}c"));
    QCOMPARE(visibleCommand(QStringLiteral("python3 -c 'print(1)'")), QStringLiteral("python3 -c 'print(1)'"));
  }

  // Under --screenshot no one can answer: nothing runs and the status says how to allow it.
  void refusedWhenNoOneCanBeAsked() {
    SetupPage page(backends_);
    page.workerPanel()->setFileCommands(FileCommands::Refuse);
    QSignalSpy declined(page.workerPanel(), &WorkerPanel::declined);
    page.workerPanel()->setConfirmation([](const QString&, const QString&) {
      qFatal("Refuse asked the user");
      return true;
    });
    page.loadSessionFrom(sessionFile_);
    QCOMPARE(declined.size(), 1);
    QVERIFY2(declined.first().first().toString().contains(QLatin1String("--trust-worker-command")),
             qPrintable(declined.first().first().toString()));
    QVERIFY(!ran());
  }

  // --trust-worker-command: the user said yes beforehand.
  void trustedCommandsStartAtOnce() {
    SetupPage page(backends_);
    page.workerPanel()->setFileCommands(FileCommands::Trust);
    page.workerPanel()->setConfirmation([](const QString&, const QString&) {
      qFatal("Trust asked the user");
      return true;
    });
    page.loadSessionFrom(sessionFile_);
    QVERIFY(page.workerPanel()->isConnecting());
    QVERIFY(ran());
    QTRY_VERIFY_WITH_TIMEOUT(!page.workerPanel()->isConnecting(), 30000);
  }

  // A reopened run fills the command in and starts nothing; Connect asks. Editing a file's
  // command still asks (the part not looked at may be what matters); a typed one does not.
  void aRunFolderStartsNothingAndConnectAsks() {
    SetupPage page(backends_);
    Session fromRun;
    fromRun.worker = sstr(command_);
    page.setSession(fromRun, WorkerStart::Never, QStringLiteral("the run folder /runs/x"));
    QVERIFY(!page.workerPanel()->isConnecting());
    QVERIFY(page.workerPanel()->awaitsConfirmation());
    QVERIFY(page.workerPanel()->statusText().contains(QLatin1String("press Connect")));
    QStringList asked;
    page.workerPanel()->setConfirmation([&asked](const QString& command, const QString& origin) {
      asked << command + QStringLiteral(" | ") + origin;
      return false;
    });
    page.workerPanel()->connectWorker();
    QCOMPARE(asked, QStringList{command_ + QStringLiteral(" | the run folder /runs/x")});
    auto* edit = page.workerPanel()->findChild<QLineEdit*>(QStringLiteral("workerCommand"));
    edit->setText(command_ + QStringLiteral(" "));
    page.workerPanel()->connectWorker();
    QCOMPARE(asked.size(), 2);
    QVERIFY(!ran());
    page.workerPanel()->setCommand(command_);  // typed: the user's own
    page.workerPanel()->connectWorker();
    QCOMPARE(asked.size(), 2);
    QVERIFY(ran());
    QTRY_VERIFY_WITH_TIMEOUT(!page.workerPanel()->isConnecting(), 30000);
  }

  // The program itself, as the issue found it: --load-session (with --start) under --screenshot
  // runs nothing and says why; --trust-worker-command runs it; --open of a worker run runs nothing.
  void theWorkbenchRunsNothingItRead() {
    QVERIFY2(!workbench().isEmpty(), "KTUNE_WORKBENCH is set by ctest");
    const auto launch = [&](const QStringList& args) {
      QProcess p;
      p.setWorkingDirectory(tmp_.path());
      p.start(workbench(), args + QStringList{QStringLiteral("--screenshot"), tmp_.filePath(QStringLiteral("s.png")),
                                              QStringLiteral("--screenshot-delay"), QStringLiteral("0")});
      if (!p.waitForFinished(60000)) p.kill();
      return std::make_pair(p.exitCode(), QString::fromUtf8(p.readAllStandardError()));
    };
    auto [code, err] = launch({QStringLiteral("--load-session"), sessionFile_, QStringLiteral("--start")});
    QVERIFY2(!ran(), qPrintable(err));
    QCOMPARE(code, 1);  // --start could not start
    QVERIFY2(err.contains(command_) && err.contains(QLatin1String("--trust-worker-command")), qPrintable(err));

    QProcess help;
    help.start(workbench(), {QStringLiteral("--help")});
    QVERIFY(help.waitForFinished(30000));
    QVERIFY(QString::fromUtf8(help.readAllStandardOutput()).contains(QLatin1String("--trust-worker-command")));

    std::tie(code, err) =
        launch({QStringLiteral("--load-session"), sessionFile_, QStringLiteral("--trust-worker-command")});
    QVERIFY2(ran(), qPrintable(err));

    // A run folder the workbench started through this worker, reopened.
    QFile::remove(pwned_);
    const std::filesystem::path dir = sstr(tmp_.filePath(QStringLiteral("runs/wrun")));
    RunMetadata meta;
    meta.run_name = "wrun";
    meta.family = "gemm";
    meta.backend = "pyscale";
    meta.device = fixture::device();
    meta.problems = fixture::problems(1);
    meta.space = fixture::space();
    meta.started_at = now_iso8601();
    Session started;
    started.worker = sstr(command_);
    meta.arguments = {"ktune-workbench", "--session", started.to_json().dump()};
    RunStore::create(dir, meta);
    std::tie(code, err) = launch({QStringLiteral("--open"), qstr(dir.string())});
    QVERIFY2(code == 0, qPrintable(err));
    QVERIFY2(!ran(), "opening a run folder ran its worker command");
  }
};

QTEST_MAIN(TestWorkerTrust)
#include "test_worker_trust.moc"
