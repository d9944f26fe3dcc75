// ktune-workbench: the Qt desktop front end of ktune.
//   ktune-workbench [--open RUN_DIR] [--load-session FILE] [--start] [--page NAME]
//                   [--registry DIR] [--screenshot FILE [--screenshot-delay MS]]
#include <QApplication>
#include <QCommandLineParser>
#include <QScreen>
#include <QTimer>
#include <cstdio>

#include "ktune/version.h"
#include "ktune/widgets/diff_page.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/run_document.h"
#include "ktune/widgets/tune_worker.h"
#include "main_window.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("ktune"));
  QApplication::setApplicationName(QStringLiteral("workbench"));
  QApplication::setApplicationVersion(QString::fromLatin1(ktune::version()));
  ktune::gui::initialize();

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("ktune workbench: set up, run, watch, judge and apply kernel tuning runs."));
  parser.addHelpOption();
  parser.addVersionOption();
  const QCommandLineOption open(QStringLiteral("open"), QStringLiteral("Open the run folder DIR."), QStringLiteral("DIR"));
  const QCommandLineOption session(QStringLiteral("load-session"), QStringLiteral("Load a session JSON file into the Setup page (Qt keeps -session for itself)."), QStringLiteral("FILE"));
  const QCommandLineOption start(QStringLiteral("start"), QStringLiteral("Start tuning right away (with --load-session)."));
  const QCommandLineOption page(QStringLiteral("page"), QStringLiteral("Show this page: setup, run, trials, landscape or apply."), QStringLiteral("NAME"));
  const QCommandLineOption registry(QStringLiteral("registry"), QStringLiteral("Registry folder to compare runs with (tuned_data)."), QStringLiteral("DIR"));
  const QCommandLineOption screenshot(QStringLiteral("screenshot"), QStringLiteral("Save a PNG of the window once rendered, then exit."), QStringLiteral("FILE"));
  const QCommandLineOption delay(QStringLiteral("screenshot-delay"), QStringLiteral("Milliseconds to wait before the screenshot (default 600)."), QStringLiteral("MS"), QStringLiteral("600"));
  parser.addOptions({open, session, start, page, registry, screenshot, delay});
  parser.process(app);

  const bool headless = parser.isSet(screenshot);
  MainWindow window(!headless);
  window.setReportErrorsToStderr(headless);
  if (parser.isSet(registry)) window.diffPage()->setRegistryRoot(parser.value(registry));
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
    // With --open the picture waits for the run to be loaded and drawn.
    if (parser.isSet(open))
      QObject::connect(window.document(), &ktune::gui::RunDocument::opened, &app, [shoot, wait] { QTimer::singleShot(wait, shoot); });
    else
      QTimer::singleShot(wait, shoot);
  }
  if (parser.isSet(session)) window.loadSession(parser.value(session));
  if (parser.isSet(open)) window.openRun(parser.value(open));
  if (parser.isSet(start)) window.startRun();
  const QStringList pages{QStringLiteral("setup"), QStringLiteral("run"), QStringLiteral("trials"), QStringLiteral("landscape"), QStringLiteral("apply")};
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
