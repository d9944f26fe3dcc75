// A session file the workbench cannot use is an InputError naming the file, never a crash:
// nesting deep enough to overflow a recursive reader, numbers that do not fit, settings out of
// their range, a directory.
#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>
#include <fstream>

#include "ktune/error.h"
#include "ktune/widgets/session.h"

using namespace ktune;
using ktune::gui::Session;

class TestSessionInput : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;

  std::string loadError(const std::string& text) {
    const std::filesystem::path file = tmp_.filePath("s.json").toStdString();
    std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
    try {
      Session::load(file);
    } catch (const InputError& e) {
      return e.what();
    }
    return {};
  }

 private slots:
  void deepNesting() {
    const std::string err =
        loadError("{\"family\": \"gemm\", \"problems\": " + std::string(200000, '[') + std::string(200000, ']') + "}");
    QVERIFY2(QString::fromStdString(err).contains("s.json") && QString::fromStdString(err).contains("nested deeper"),
             err.c_str());
  }
  void numberOverflow() {
    const std::string err = loadError("{\"family\": \"gemm\", \"seed\": 1e400}");
    QVERIFY2(QString::fromStdString(err).contains("number overflow"), err.c_str());
  }
  // The core's range of each setting, with its message: a session no run could use is refused.
  void settingOutOfRange() {
    const std::string err = loadError("{\"family\": \"gemm\", \"measure\": {\"noise_target\": 2}}");
    QVERIFY2(QString::fromStdString(err).contains("s.json: measure.noise_target: 2 is out of range"), err.c_str());
    const std::string samples = loadError("{\"family\": \"gemm\", \"measure\": {\"min_samples\": 0}}");
    QVERIFY2(QString::fromStdString(samples).contains("measure.min_samples: 0 is out of range"), samples.c_str());
  }
  void directory() {
    try {
      Session::load(tmp_.path().toStdString());
      QFAIL("a directory loaded as a session");
    } catch (const InputError& e) {
      QVERIFY2(QString(e.what()).contains("is a directory"), e.what());
    }
  }
};

QTEST_MAIN(TestSessionInput)
#include "test_session_input.moc"
