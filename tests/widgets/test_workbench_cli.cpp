// What `ktune-workbench`'s command line tells a new user: --help answers without a display, and
// a value it cannot use (--budget abc, --y-metric a run does not record, --brush-best 0) is an
// error naming the option and the value, never a silent default; --compare-with opens the
// comparison of two runs.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "ktune/widgets/qt_types.h"
#include "run_fixture.h"

using namespace ktune::gui;
namespace fs = std::filesystem;

class TestWorkbenchCli : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;
  QString run_;

  struct Outcome {
    int rc = -1;
    QString out, err;
  };
  // Runs the workbench with `args`; `display` false leaves it no display at all (no
  // QT_QPA_PLATFORM, no DISPLAY, no WAYLAND_DISPLAY), as over ssh.
  Outcome workbench(const QStringList& args, bool display = true) {
    QProcess p;
    auto env = QProcessEnvironment::systemEnvironment();
    if (display) {
      env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    } else {
      for (const char* name : {"QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY"}) env.remove(QString::fromLatin1(name));
    }
    p.setProcessEnvironment(env);
    p.setWorkingDirectory(tmp_.path());
    p.start(qEnvironmentVariable("KTUNE_WORKBENCH"), args);
    if (!p.waitForFinished(120000)) return {};
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromUtf8(p.readAllStandardOutput()),
            QString::fromUtf8(p.readAllStandardError())};
  }

 private slots:
  void initTestCase() {
    QVERIFY2(!qEnvironmentVariable("KTUNE_WORKBENCH").isEmpty(),
             "KTUNE_WORKBENCH is not set: run the suite through ctest, which sets it");
    const fs::path dir = fs::path(tmp_.path().toStdString()) / "run";
    fixture::write_run(dir, 200, 2);
    run_ = qstr(dir.string());
  }

  void helpNeedsNoDisplay() {
    for (const QString& flag : {QStringLiteral("--help"), QStringLiteral("-h")}) {
      const Outcome o = workbench({flag}, false);
      QVERIFY2(o.rc == 0, qPrintable(QStringLiteral("rc %1: %2").arg(o.rc).arg(o.err)));
      QVERIFY(o.out.contains(QStringLiteral("--load-session")));
      QVERIFY(o.out.contains(QStringLiteral("--start")));
      QVERIFY(o.out.contains(QStringLiteral("QT_QPA_PLATFORM=offscreen")));
    }
    const Outcome v = workbench({QStringLiteral("--version")}, false);
    QCOMPARE(v.rc, 0);
    QVERIFY(!v.out.trimmed().isEmpty());
  }

  void numbersAreReadWhole() {
    const struct {
      QStringList args;
      QString says;
    } cases[] = {
        {{QStringLiteral("--replay"), run_, QStringLiteral("--budget"), QStringLiteral("abc")},
         QStringLiteral("--budget 'abc' is not a count of configs")},
        {{QStringLiteral("--replay"), run_, QStringLiteral("--budget"), QStringLiteral("0")},
         QStringLiteral("--budget '0'")},
        {{QStringLiteral("--replay"), run_, QStringLiteral("--seed"), QStringLiteral("-1")},
         QStringLiteral("--seed '-1'")},
        {{QStringLiteral("--replay"), run_, QStringLiteral("--replay-pace"), QStringLiteral("fast")},
         QStringLiteral("--replay-pace 'fast'")},
        {{QStringLiteral("--open"), run_, QStringLiteral("--screenshot-delay"), QStringLiteral("1s")},
         QStringLiteral("--screenshot-delay '1s'")},
        {{QStringLiteral("--open"), run_, QStringLiteral("--brush-best"), QStringLiteral("0")},
         QStringLiteral("--brush-best '0' is not a count of configs")},
        {{QStringLiteral("--open"), run_, QStringLiteral("--brush-best"), QStringLiteral("five")},
         QStringLiteral("--brush-best 'five'")},
    };
    for (const auto& c : cases) {
      const Outcome o = workbench(c.args);
      QVERIFY2(o.rc == 2, qPrintable(c.args.join(' ') + QStringLiteral(": rc %1 ").arg(o.rc) + o.err));
      QVERIFY2(o.err.contains(c.says), qPrintable(o.err));
    }
  }

  void unknownYMetricIsSaid() {
    // The fixture's run records no metric beside its times.
    const QString png = tmp_.filePath(QStringLiteral("bogus.png"));
    Outcome o = workbench({QStringLiteral("--open"), run_, QStringLiteral("--y-metric"), QStringLiteral("bogus"),
                           QStringLiteral("--screenshot"), png});
    QVERIFY2(o.rc == 2, qPrintable(QStringLiteral("rc %1: %2").arg(o.rc).arg(o.err)));
    QVERIFY2(o.err.contains(QStringLiteral("--y-metric 'bogus': the run records no such metric; it records latency "
                                           "only")),
             qPrintable(o.err));
    QVERIFY(!QFile::exists(png));
    // Without a run there is nothing to plot it on.
    o = workbench({QStringLiteral("--y-metric"), QStringLiteral("GFLOP/s")});
    QCOMPARE(o.rc, 2);
    QVERIFY2(o.err.contains(QStringLiteral("--y-metric needs a run")), qPrintable(o.err));
    // Latency, the default, still opens.
    o = workbench({QStringLiteral("--open"), run_, QStringLiteral("--screenshot"), png, QStringLiteral("--page"),
                   QStringLiteral("landscape")});
    QVERIFY2(o.rc == 0, qPrintable(o.err));
    QVERIFY(QFile::exists(png));
    // × best is always offered, whatever the run records.
    QVERIFY(QFile::remove(png));
    o = workbench({QStringLiteral("--open"), run_, QStringLiteral("--y-metric"), QStringLiteral("vs_best"),
                   QStringLiteral("--screenshot"), png});
    QVERIFY2(o.rc == 0, qPrintable(o.err));
    QVERIFY(QFile::exists(png));
  }

  // --brush-best brushes the Analyse page's fastest configs of an opened run (the Trials page then
  // lists only them); without a run there is nothing to brush.
  void brushBestNeedsARun() {
    Outcome o = workbench({QStringLiteral("--brush-best"), QStringLiteral("5")});
    QCOMPARE(o.rc, 2);
    QVERIFY2(o.err.contains(QStringLiteral("--brush-best needs a run to brush: add --open DIR")), qPrintable(o.err));
    const QString png = tmp_.filePath(QStringLiteral("brushed.png"));
    o = workbench({QStringLiteral("--open"), run_, QStringLiteral("--page"), QStringLiteral("trials"),
                   QStringLiteral("--brush-best"), QStringLiteral("5"), QStringLiteral("--screenshot"), png});
    QVERIFY2(o.rc == 0, qPrintable(o.err));
    QVERIFY(QFile::exists(png));
  }

  // --compare-with shows the Apply page's comparison of two runs; it needs a run to compare, and
  // names a folder that is none.
  void compareWith() {
    const fs::path other = fs::path(tmp_.path().toStdString()) / "other";
    fixture::write_run(other, 200, 3, true, 2);
    const QString png = tmp_.filePath(QStringLiteral("compare.png"));
    Outcome o = workbench({QStringLiteral("--compare-with"), qstr(other.string())});
    QCOMPARE(o.rc, 2);
    QVERIFY2(o.err.contains(QStringLiteral("--compare-with needs a run to compare: add --open DIR")),
             qPrintable(o.err));
    o = workbench({QStringLiteral("--open"), run_, QStringLiteral("--compare-with"), qstr(other.string()),
                   QStringLiteral("--page"), QStringLiteral("apply"), QStringLiteral("--screenshot"), png});
    QVERIFY2(o.rc == 0, qPrintable(o.err));
    QVERIFY(QFile::exists(png));
    const Outcome help = workbench({QStringLiteral("--help")}, false);
    QVERIFY(help.out.contains(QStringLiteral("--compare-with")));
  }
};

QTEST_MAIN(TestWorkbenchCli)
#include "test_workbench_cli.moc"
