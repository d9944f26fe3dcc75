// ktune-workbench: the Qt desktop front end of ktune.
//   ktune-workbench [--open RUN_DIR] [--load-session FILE [--trust-worker-command]] [--start] [--page NAME]
//                   [--registry DIR] [--y-metric NAME] [--screenshot FILE [--screenshot-delay MS]]
//   ktune-workbench worker --backend B --device I   (what the Setup page's Isolate starts)
#include <unistd.h>

#include <QApplication>
#include <QCommandLineParser>
#include <QMessageBox>
#include <QScreen>
#include <QTimer>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "ktune/backends.h"
#include "ktune/version.h"
#include "ktune/widgets/diff_page.h"
#include "ktune/widgets/landscape_page.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/replay_dialog.h"
#include "ktune/widgets/run_document.h"
#include "ktune/widgets/setup_page.h"
#include "ktune/widgets/tune_worker.h"
#include "ktune/widgets/worker_panel.h"
#include "ktune/worker_server.h"
#include "main_window.h"

namespace {

// `ktune-workbench worker --backend B --device I`: serves a built-in backend over the worker
// protocol on stdin/stdout, as `ktune worker` does, so that Isolate needs no second program. No
// QApplication: it runs where no display is.
int serveWorker(int argc, char** argv) {
  std::string backend = "cpu";
  int device = 0;
  const auto refuse = [](const char* what) {
    std::fprintf(stderr, "ktune-workbench worker: cannot read '%s'; use --backend B --device I\n", what);
    return 2;
  };
  for (int i = 2; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return refuse(argv[i]);
    if (flag == "--backend") {
      backend = argv[i + 1];
    } else if (flag == "--device") {
      char* end = nullptr;
      device = static_cast<int>(std::strtol(argv[i + 1], &end, 10));
      if (end == argv[i + 1] || *end != 0) return refuse(argv[i + 1]);
    } else {
      return refuse(argv[i]);
    }
  }
  try {
    // The protocol owns the real stdout; anything else printing to fd 1 lands on stderr.
    const int protocolOut = dup(STDOUT_FILENO);
    if (protocolOut < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) throw std::runtime_error("cannot set up stdout");
    auto backends = ktune::make_backends();
    return ktune::worker::serve(ktune::find_backend(backends, backend), {device, {}, "ktune-workbench worker"},
                                STDIN_FILENO, protocolOut);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ktune-workbench worker: %s\n", e.what());
    return 2;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "worker") return serveWorker(argc, argv);
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("ktune"));
  QApplication::setApplicationName(QStringLiteral("workbench"));
  QApplication::setApplicationVersion(QString::fromLatin1(ktune::version()));
  ktune::gui::initialize();

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral(
      "ktune workbench: set up, run, watch, judge and apply kernel tuning runs.\n"
      "ktune-workbench worker --backend B [--device I] serves a built-in backend over the worker protocol on\n"
      "stdin/stdout (what the Setup page's Isolate starts; see docs/worker-protocol.md)."));
  parser.addHelpOption();
  parser.addVersionOption();
  const QCommandLineOption open(QStringLiteral("open"), QStringLiteral("Open the run folder DIR."),
                                QStringLiteral("DIR"));
  const QCommandLineOption session(
      QStringLiteral("load-session"),
      QStringLiteral("Load a session JSON file into the Setup page (Qt keeps -session for itself)."),
      QStringLiteral("FILE"));
  const QCommandLineOption start(
      QStringLiteral("start"),
      QStringLiteral("Start tuning right away (with --load-session). A session whose worker command is not "
                     "confirmed (or, with --screenshot, not trusted) does not start: it says why."));
  const QCommandLineOption trustWorker(
      QStringLiteral("trust-worker-command"),
      QStringLiteral("Start the worker command of a --load-session file without asking. Without it the workbench "
                     "shows the command and asks first (with --screenshot, where no one can answer, it is not "
                     "started); a run folder's command always waits for Connect."));
  const QCommandLineOption page(QStringLiteral("page"),
                                QStringLiteral("Show this page: setup, run, trials, landscape or apply."),
                                QStringLiteral("NAME"));
  const QCommandLineOption registry(QStringLiteral("registry"),
                                    QStringLiteral("Registry folder to compare runs with (tuned_data)."),
                                    QStringLiteral("DIR"));
  const QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                      QStringLiteral("Save a PNG of the window once rendered, then exit."),
                                      QStringLiteral("FILE"));
  const QCommandLineOption delay(QStringLiteral("screenshot-delay"),
                                 QStringLiteral("Milliseconds to wait before the screenshot (default 600)."),
                                 QStringLiteral("MS"), QStringLiteral("600"));
  const QCommandLineOption yMetric(
      QStringLiteral("y-metric"),
      QStringLiteral("Plot this recorded metric (e.g. GFLOP/s of an imported Kernel Tuner cache) "
                     "instead of latency on the landscape's scatter charts."),
      QStringLiteral("NAME"));
  const QCommandLineOption replay(
      QStringLiteral("replay"),
      QStringLiteral("Replay the recorded run DIR: a strategy searches its landscape, which "
                     "answers instead of a device, shown as a live run."),
      QStringLiteral("DIR"));
  const QCommandLineOption strategy(QStringLiteral("strategy"),
                                    QStringLiteral("With --replay: the strategy (default bayes)."),
                                    QStringLiteral("NAME"), QStringLiteral("bayes"));
  const QCommandLineOption budget(QStringLiteral("budget"),
                                  QStringLiteral("With --replay: configs per shape (default 50)."), QStringLiteral("N"),
                                  QStringLiteral("50"));
  const QCommandLineOption seed(QStringLiteral("seed"),
                                QStringLiteral("With --replay: the strategy's seed (default 0)."), QStringLiteral("S"),
                                QStringLiteral("0"));
  const QCommandLineOption pace(QStringLiteral("replay-pace"),
                                QStringLiteral("With --replay: milliseconds each recorded answer takes (default 100)."),
                                QStringLiteral("MS"), QStringLiteral("100"));
  parser.addOptions({open, session, start, trustWorker, page, registry, screenshot, delay, yMetric, replay, strategy,
                     budget, seed, pace});
  parser.process(app);

  const bool headless = parser.isSet(screenshot);
  // The window looks at every backend's devices as it is built; a backend that refuses its
  // environment (a malformed KTUNE_CPU_DEVICE) is said plainly, not a terminate().
  std::unique_ptr<MainWindow> made;
  try {
    made = std::make_unique<MainWindow>(!headless);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ktune-workbench: %s\n", e.what());
    if (!headless) QMessageBox::critical(nullptr, QStringLiteral("ktune workbench"), QString::fromUtf8(e.what()));
    return 2;
  }
  MainWindow& window = *made;
  window.setReportErrorsToStderr(headless);
  // A worker command read from a file starts once the user said yes; with --screenshot no one can.
  ktune::gui::WorkerPanel* workerPanel = window.setupPage()->workerPanel();
  workerPanel->setFileCommands(parser.isSet(trustWorker) ? ktune::gui::FileCommands::Trust
                               : headless                ? ktune::gui::FileCommands::Refuse
                                                         : ktune::gui::FileCommands::Ask);
  if (headless)
    QObject::connect(workerPanel, &ktune::gui::WorkerPanel::declined, &app, [](const QString& message) {
      std::fprintf(stderr, "ktune-workbench: %s\n", qPrintable(message));
    });
  if (parser.isSet(registry)) window.diffPage()->setRegistryRoot(parser.value(registry));
  if (parser.isSet(yMetric)) window.landscapePage()->setYMetric(parser.value(yMetric));
  window.show();

  int exitCode = 0;
  if (headless) {
    const QString file = parser.value(screenshot);
    const int wait = parser.value(delay).toInt();
    const auto shoot = [&window, file, &exitCode] {
      if (!window.grab().save(file)) {
        std::fprintf(stderr, "ktune-workbench: cannot write %s\n", qPrintable(file));
        exitCode = 1;
      }
      window.controller()->stop();
      window.controller()->waitForFinished();
      QApplication::exit(exitCode);
    };
    QObject::connect(&window, &MainWindow::errorShown, &app, [&exitCode] {
      exitCode = 1;
      QApplication::exit(1);
    });
    // With --open the picture waits for the run to be loaded and drawn; with --replay for the
    // replay to end.
    if (parser.isSet(replay))
      QObject::connect(window.controller(), &ktune::gui::RunController::finished, &app,
                       [shoot, wait] { QTimer::singleShot(wait, shoot); });
    else if (parser.isSet(open))
      QObject::connect(window.document(), &ktune::gui::RunDocument::opened, &app,
                       [shoot, wait] { QTimer::singleShot(wait, shoot); });
    else
      // A session with an external worker waits for the worker's hello (or its failure), so the
      // picture shows what it offers.
      QTimer::singleShot(0, &window, [&window, shoot, wait] {
        ktune::gui::WorkerPanel* panel = window.setupPage()->workerPanel();
        const auto later = [shoot, wait] { QTimer::singleShot(wait, shoot); };
        if (!panel->isConnecting()) return later();
        QObject::connect(panel, &ktune::gui::WorkerPanel::connected, &window, later);
        QObject::connect(panel, &ktune::gui::WorkerPanel::failed, &window, later);
      });
  }
  if (parser.isSet(session)) window.loadSession(parser.value(session));
  if (parser.isSet(open)) window.openRun(parser.value(open));
  if (parser.isSet(start)) window.startRun();
  if (parser.isSet(replay)) {
    ktune::gui::ReplayChoice choice;
    choice.runDir = parser.value(replay);
    choice.strategy.kind = parser.value(strategy).toStdString();
    choice.strategy.budget = parser.value(budget).toULongLong();
    choice.strategy.seed = parser.value(seed).toULongLong();
    choice.paceMs = parser.value(pace).toDouble();
    window.replayRun(choice);
  }
  const QStringList pages{QStringLiteral("setup"), QStringLiteral("run"), QStringLiteral("trials"),
                          QStringLiteral("landscape"), QStringLiteral("apply")};
  if (parser.isSet(page)) {
    const int index = static_cast<int>(pages.indexOf(parser.value(page)));
    if (index < 0) {
      std::fprintf(stderr, "ktune-workbench: unknown page '%s'; use one of %s\n", qPrintable(parser.value(page)),
                   qPrintable(pages.join(QStringLiteral(", "))));
      return 2;
    }
    window.showPage(static_cast<MainWindow::Page>(index));
  }
  const int rc = app.exec();
  return headless ? exitCode : rc;
}
