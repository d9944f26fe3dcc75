#pragma once
// Running the ktune binary (KTUNE_CLI) and reading and writing whole files, for the CLI suites.
#include <QFile>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QtTest>

struct Result {
  int code = -1;
  QString out, err;
};

inline QString cli() { return qEnvironmentVariable("KTUNE_CLI"); }

// stdout_file: where the command's standard output goes instead of Result::out.
inline Result run(const QStringList& args, const QString& cwd = {}, int timeout_ms = 300000, const QString& stdout_file = {}) {
  QProcess p;
  if (!cwd.isEmpty()) p.setWorkingDirectory(cwd);
  if (!stdout_file.isEmpty()) p.setStandardOutputFile(stdout_file);
  p.start(cli(), args);
  if (!p.waitForFinished(timeout_ms)) {
    p.kill();
    p.waitForFinished();
  }
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromUtf8(p.readAllStandardOutput()),
          QString::fromUtf8(p.readAllStandardError())};
}

inline QByteArray readAll(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

inline void writeAll(const QString& path, const QByteArray& data) {
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
  f.write(data);
}

