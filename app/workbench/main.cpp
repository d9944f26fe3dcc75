// ktune-workbench: the Qt desktop front end of ktune.
//   ktune-workbench [--open RUN_DIR] [--load-session FILE [--trust-worker-command]] [--start] [--page NAME]
//                   [--registry DIR] [--compare-with RUN_DIR] [--y-metric NAME]
//                   [--screenshot FILE [--screenshot-delay MS]]
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
#include <optional>

#include "ktune/backends.h"
#include "ktune/version.h"
#include "ktune/widgets/analyse_page.h"
#include "ktune/widgets/chart_metric.h"
#include "ktune/widgets/diff_page.h"
#include "ktune/widgets/landscape_page.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/replay_dialog.h"
#include "ktune/widgets/run_document.h"
#include "ktune/widgets/setup_page.h"
#include "ktune/widgets/trials_model.h"
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

// Every option of the command line; declared once so that --help can be answered before any
// display is needed.
struct Options {
  QCommandLineOption open{QStringLiteral("open"), QStringLiteral("Open the run folder DIR."), QStringLiteral("DIR")};
  QCommandLineOption session{
      QStringLiteral("load-session"),
      QStringLiteral("Load a session JSON file into the Setup page (Qt keeps -session for itself). File → Save "
                     "Session writes one; README.md (\"Sessions\") describes its fields."),
      QStringLiteral("FILE")};
  QCommandLineOption start{
      QStringLiteral("start"),
      QStringLiteral("Start tuning right away (with --load-session). A session whose worker command is not "
                     "confirmed (or, with --screenshot, not trusted) does not start: it says why.")};
  QCommandLineOption trustWorker{
      QStringLiteral("trust-worker-command"),
      QStringLiteral("Start the worker command of a --load-session file without asking. Without it the workbench "
                     "shows the command and asks first (with --screenshot, where no one can answer, it is not "
                     "started); a run folder's command always waits for Connect.")};
  QCommandLineOption page{QStringLiteral("page"),
                          QStringLiteral("Show this page: setup, run, trials, landscape, analyse or apply."),
                          QStringLiteral("NAME")};
  QCommandLineOption registry{QStringLiteral("registry"),
                              QStringLiteral("Registry folder to compare runs with (tuned_data)."),
                              QStringLiteral("DIR")};
  QCommandLineOption compareWith{
      QStringLiteral("compare-with"),
      QStringLiteral("With --open: the Apply page puts the run folder DIR beside the opened run, shape by shape "
                     "(Compare with run…: two devices, two dates, before and after a kernel change)."),
      QStringLiteral("DIR")};
  QCommandLineOption screenshot{
      QStringLiteral("screenshot"),
      QStringLiteral("Save a PNG of the window once rendered, then exit. Without a display, set "
                     "QT_QPA_PLATFORM=offscreen (or run under xvfb-run -a)."),
      QStringLiteral("FILE")};
  QCommandLineOption delay{QStringLiteral("screenshot-delay"),
                           QStringLiteral("Milliseconds to wait before the screenshot (default 600)."),
                           QStringLiteral("MS"), QStringLiteral("600")};
  QCommandLineOption yMetric{
      QStringLiteral("y-metric"),
      QStringLiteral("Plot vs_best (each trial's median over its shape's best) or a recorded metric (e.g. GFLOP/s "
                     "of an imported Kernel Tuner cache) instead of latency on the landscape's scatter charts (with "
                     "--open, --replay or --start). A name the run does not record is an error that lists the "
                     "names it does."),
      QStringLiteral("NAME")};
  QCommandLineOption brushBest{
      QStringLiteral("brush-best"),
      QStringLiteral("With --open: brush the N fastest configs of the Analyse page's shape on its parallel "
                     "coordinates, as dragging over the latency axis's bottom does: the Trials page lists only them "
                     "and the Landscape page dims every other trial."),
      QStringLiteral("N")};
  QCommandLineOption replay{QStringLiteral("replay"),
                            QStringLiteral("Replay the recorded run DIR: a strategy searches its landscape, which "
                                           "answers instead of a device, shown as a live run."),
                            QStringLiteral("DIR")};
  QCommandLineOption strategy{QStringLiteral("strategy"),
                              QStringLiteral("With --replay: the strategy (default bayes)."), QStringLiteral("NAME"),
                              QStringLiteral("bayes")};
  QCommandLineOption budget{QStringLiteral("budget"), QStringLiteral("With --replay: configs per shape (default 50)."),
                            QStringLiteral("N"), QStringLiteral("50")};
  QCommandLineOption seed{QStringLiteral("seed"), QStringLiteral("With --replay: the strategy's seed (default 0)."),
                          QStringLiteral("S"), QStringLiteral("0")};
  QCommandLineOption pace{QStringLiteral("replay-pace"),
                          QStringLiteral("With --replay: milliseconds each recorded answer takes (default 100)."),
                          QStringLiteral("MS"), QStringLiteral("100")};

  void addTo(QCommandLineParser& parser) const {
    parser.setApplicationDescription(QStringLiteral(
        "ktune workbench: set up, run, watch, judge and apply kernel tuning runs.\n"
        "ktune-workbench worker --backend B [--device I] serves a built-in backend over the worker protocol on\n"
        "stdin/stdout (what the Setup page's Isolate starts; see docs/worker-protocol.md).\n"
        "Without a display (ssh, CI), run it with QT_QPA_PLATFORM=offscreen or under xvfb-run -a."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addOptions({open, session, start, trustWorker, page, registry, compareWith, screenshot, delay, yMetric,
                       brushBest, replay, strategy, budget, seed, pace});
  }
};

void nameApplication() {
  QCoreApplication::setOrganizationName(QStringLiteral("ktune"));
  QCoreApplication::setApplicationName(QStringLiteral("workbench"));
  QCoreApplication::setApplicationVersion(QString::fromLatin1(ktune::version()));
}

// --help and --version print and exit: they need no display, so they are answered before the
// QApplication that needs one (without it, xcb aborts with rc 134).
bool asksForHelp(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help" || a == "-?" || a == "--help-all" || a == "-v" || a == "--version") return true;
  }
  return false;
}

// The numbers the options take, read whole: "--budget abc" is an error naming the option and the
// value, never a 0.
struct Numbers {
  qulonglong budget = 0, seed = 0;
  double paceMs = 0;
  int delayMs = 0;
  int brushBest = 0;  // 0: no brush
};
std::optional<Numbers> readNumbers(const QCommandLineParser& parser, const Options& o) {
  Numbers n;
  const auto refuse = [&parser](const QCommandLineOption& option, const char* what) {
    std::fprintf(stderr, "ktune-workbench: --%s '%s' is not %s\n", qPrintable(option.names().constFirst()),
                 qPrintable(parser.value(option)), what);
    return std::nullopt;
  };
  bool ok = false;
  n.budget = parser.value(o.budget).toULongLong(&ok);
  if (!ok || n.budget == 0) return refuse(o.budget, "a count of configs (a whole number from 1; default 50)");
  n.seed = parser.value(o.seed).toULongLong(&ok);
  if (!ok) return refuse(o.seed, "a seed (a whole number from 0)");
  n.paceMs = parser.value(o.pace).toDouble(&ok);
  if (!ok || !(n.paceMs >= 0)) return refuse(o.pace, "a number of milliseconds (0 or more)");
  n.delayMs = parser.value(o.delay).toInt(&ok);
  if (!ok || n.delayMs < 0) return refuse(o.delay, "a whole number of milliseconds (0 or more)");
  if (parser.isSet(o.brushBest)) {
    n.brushBest = parser.value(o.brushBest).toInt(&ok);
    if (!ok || n.brushBest < 1) return refuse(o.brushBest, "a count of configs (a whole number from 1)");
  }
  return n;
}

// Why the metric --y-metric names cannot be plotted (the run records no such number), or empty.
QString unknownMetric(const QString& name, const QStringList& recorded) {
  const QString vsBest = ktune::gui::ChartMetric::vsBestName();
  if (name == vsBest || recorded.contains(name)) return {};
  return QStringLiteral("--y-metric '%1': the run records no such metric; %2")
      .arg(name, recorded.isEmpty()
                     ? QStringLiteral("it records latency only: leave --y-metric out, or use %1").arg(vsBest)
                     : QStringLiteral("use %1 or one it records: %2").arg(vsBest, recorded.join(QStringLiteral(", "))));
}

// Once the run is there (opened, or a live run finished), a --y-metric the run does not record
// is said: on stderr with exit 2 headless, in a message box otherwise. Connected before the
// screenshot, so no picture of the wrong chart is taken.
void checkYMetric(MainWindow& window, const QString& name, bool headless, int& exitCode) {
  const auto check = [&window, name, headless, &exitCode] {
    const QString problem = unknownMetric(name, window.document()->trials()->metricNames());
    if (problem.isEmpty()) return;
    if (!headless) {
      QMessageBox::warning(&window, QStringLiteral("ktune workbench"), problem);
      return;
    }
    std::fprintf(stderr, "ktune-workbench: %s\n", qPrintable(problem));
    exitCode = 2;
    QApplication::exit(2);
  };
  QObject::connect(window.document(), &ktune::gui::RunDocument::opened, &window, check);
  QObject::connect(window.controller(), &ktune::gui::RunController::finished, &window, check);
}

// --screenshot: the picture is taken once what was asked for is drawn, then the program exits.
void armScreenshot(MainWindow& window, const QCommandLineParser& parser, const Options& o, int wait, int& exitCode) {
  const auto shoot = [&window, file = parser.value(o.screenshot), &exitCode] {
    if (!window.grab().save(file)) {
      std::fprintf(stderr, "ktune-workbench: cannot write %s\n", qPrintable(file));
      exitCode = 1;
    }
    window.controller()->stop();
    window.controller()->waitForFinished();
    QApplication::exit(exitCode);
  };
  QObject::connect(&window, &MainWindow::errorShown, &window, [&exitCode] {
    exitCode = 1;
    QApplication::exit(1);
  });
  // With --open the picture waits for the run to be loaded and drawn; with --replay for the
  // replay to end.
  if (parser.isSet(o.replay))
    QObject::connect(window.controller(), &ktune::gui::RunController::finished, &window,
                     [shoot, wait] { QTimer::singleShot(wait, shoot); });
  else if (parser.isSet(o.open))
    QObject::connect(window.document(), &ktune::gui::RunDocument::opened, &window,
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

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "worker") return serveWorker(argc, argv);
  QCommandLineParser parser;
  const Options o;
  o.addTo(parser);
  if (asksForHelp(argc, argv)) {
    QCoreApplication core(argc, argv);
    nameApplication();
    parser.process(core);  // prints and exits
    return 0;
  }
  QApplication app(argc, argv);
  nameApplication();
  ktune::gui::initialize();
  parser.process(app);
  const std::optional<Numbers> numbers = readNumbers(parser, o);
  if (!numbers) return 2;
  if (parser.isSet(o.compareWith) && !parser.isSet(o.open)) {
    std::fprintf(stderr, "ktune-workbench: --compare-with needs a run to compare: add --open DIR\n");
    return 2;
  }
  if (parser.isSet(o.brushBest) && !parser.isSet(o.open)) {
    std::fprintf(stderr, "ktune-workbench: --brush-best needs a run to brush: add --open DIR\n");
    return 2;
  }
  if (parser.isSet(o.yMetric) && !parser.isSet(o.open) && !parser.isSet(o.replay) && !parser.isSet(o.start)) {
    std::fprintf(stderr, "ktune-workbench: --y-metric needs a run to plot: add --open DIR, --replay DIR or --start\n");
    return 2;
  }

  const QStringList pages{QStringLiteral("setup"),     QStringLiteral("run"),     QStringLiteral("trials"),
                          QStringLiteral("landscape"), QStringLiteral("analyse"), QStringLiteral("apply")};
  const int pageIndex = parser.isSet(o.page) ? static_cast<int>(pages.indexOf(parser.value(o.page))) : -1;
  if (parser.isSet(o.page) && pageIndex < 0) {
    std::fprintf(stderr, "ktune-workbench: unknown page '%s'; use one of %s\n", qPrintable(parser.value(o.page)),
                 qPrintable(pages.join(QStringLiteral(", "))));
    return 2;
  }

  const bool headless = parser.isSet(o.screenshot);
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
  workerPanel->setFileCommands(parser.isSet(o.trustWorker) ? ktune::gui::FileCommands::Trust
                               : headless                  ? ktune::gui::FileCommands::Refuse
                                                           : ktune::gui::FileCommands::Ask);
  if (headless)
    QObject::connect(workerPanel, &ktune::gui::WorkerPanel::declined, &app, [](const QString& message) {
      std::fprintf(stderr, "ktune-workbench: %s\n", qPrintable(message));
    });
  if (parser.isSet(o.registry)) window.diffPage()->setRegistryRoot(parser.value(o.registry));
  // Compared once the opened run's results are there.
  if (parser.isSet(o.compareWith)) window.diffPage()->compareWithRun(parser.value(o.compareWith));
  int exitCode = 0;
  if (parser.isSet(o.yMetric)) {
    window.landscapePage()->setYMetric(parser.value(o.yMetric));
    checkYMetric(window, parser.value(o.yMetric), headless, exitCode);
  }
  if (numbers->brushBest > 0)
    QObject::connect(window.document(), &ktune::gui::RunDocument::opened, &window,
                     [&window, n = numbers->brushBest] { window.analysePage()->brushFastest(n); });
  window.show();

  if (headless) armScreenshot(window, parser, o, numbers->delayMs, exitCode);
  if (parser.isSet(o.session)) window.loadSession(parser.value(o.session));
  if (parser.isSet(o.open)) window.openRun(parser.value(o.open));
  if (parser.isSet(o.start)) window.startRun();
  if (parser.isSet(o.replay)) {
    ktune::gui::ReplayChoice choice;
    choice.runDir = parser.value(o.replay);
    choice.strategy.kind = parser.value(o.strategy).toStdString();
    choice.strategy.budget = numbers->budget;
    choice.strategy.seed = numbers->seed;
    choice.paceMs = numbers->paceMs;
    window.replayRun(choice);
  }
  if (pageIndex >= 0) window.showPage(static_cast<MainWindow::Page>(pageIndex));
  const int rc = app.exec();
  return headless ? exitCode : rc;
}
