#pragma once
// Running the ktune binary (KTUNE_CLI) and reading and writing whole files, for the CLI suites;
// a run's trials as the user sees them (`ktune export`), and processes by /proc (orphan checks).
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QtTest>

struct Result {
  int code = -1;
  QString out, err;
};

inline QString cli() { return qEnvironmentVariable("KTUNE_CLI"); }
inline QString python() { return qEnvironmentVariable("KTUNE_PYTHON"); }
inline QString source(const QString& rel) { return QStringLiteral(KTUNE_SOURCE_DIR "/") + rel; }
// tests/cli/raw_worker.py: a worker on the raw protocol (RAW_MODE, RAW_DEVICES, RAW_LOG say how it behaves).
inline QString rawWorker() { return python() + " " + source("tests/cli/raw_worker.py"); }

// stdout_file: where the command's standard output goes instead of Result::out.
inline Result run(const QStringList& args, const QString& cwd, int timeout_ms, const QString& stdout_file,
                  const QProcessEnvironment& env) {
  QProcess p;
  if (!cwd.isEmpty()) p.setWorkingDirectory(cwd);
  if (!stdout_file.isEmpty()) p.setStandardOutputFile(stdout_file);
  p.setProcessEnvironment(env);
  p.start(cli(), args);
  if (!p.waitForFinished(timeout_ms)) {
    p.kill();
    p.waitForFinished();
  }
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromUtf8(p.readAllStandardOutput()),
          QString::fromUtf8(p.readAllStandardError())};
}
inline Result run(const QStringList& args, const QString& cwd = {}, int timeout_ms = 300000,
                  const QString& stdout_file = {}) {
  return run(args, cwd, timeout_ms, stdout_file, QProcessEnvironment::systemEnvironment());
}
inline Result run(const QStringList& args, const QString& cwd, const QProcessEnvironment& env) {
  return run(args, cwd, 300000, {}, env);
}

inline QProcessEnvironment envWith(const QString& key, const QString& value) {
  auto env = QProcessEnvironment::systemEnvironment();
  env.insert(key, value);
  return env;
}

// The run's trials (from `ktune export --format json`), measured ones only.
inline QJsonArray measuredTrials(const QString& cwd, const QString& run_dir) {
  const Result r = run({"export", run_dir, "--format", "json"}, cwd);
  QJsonArray out;
  for (const auto& t : QJsonDocument::fromJson(r.out.toUtf8()).object()["trials"].toArray())
    if (t.toObject()["status"].toString() != "pruned") out.append(t);
  return out;
}

// "problem | config" of each measured trial: what a run measured, whatever the times.
inline QStringList trialKeys(const QString& cwd, const QString& run_dir) {
  QStringList out;
  for (const auto& t : measuredTrials(cwd, run_dir))
    out << t.toObject()["problem"].toString() + " | " +
               QString::fromUtf8(QJsonDocument(t.toObject()["config"].toObject()).toJson(QJsonDocument::Compact));
  out.sort();
  return out;
}

// Pids whose parent is `pid` (from /proc/*/stat).
inline QList<qint64> childrenOf(qint64 pid) {
  QList<qint64> out;
  for (const auto& e : QDir("/proc").entryList(QDir::Dirs)) {
    bool ok = false;
    const qint64 p = e.toLongLong(&ok);
    if (!ok) continue;
    QFile f("/proc/" + e + "/stat");
    if (!f.open(QIODevice::ReadOnly)) continue;
    const QString stat = QString::fromUtf8(f.readAll());
    const auto fields = stat.mid(stat.lastIndexOf(')') + 2).split(' ');
    if (fields.size() > 1 && fields[1].toLongLong() == pid) out << p;
  }
  return out;
}

inline bool alive(qint64 pid) {
  QFile f(QString("/proc/%1/stat").arg(pid));
  if (!f.open(QIODevice::ReadOnly)) return false;
  const QString stat = QString::fromUtf8(f.readAll());
  return !stat.mid(stat.lastIndexOf(')') + 2).startsWith('Z');  // a zombie is dead
}

// Measurement settings for a run of tiny CPU problems: a second or so, with room for a loaded host.
inline QStringList quickMeasure() {
  return {"--warmup-ms", "1", "--max-ms-per-config", "2000", "--min-samples", "3", "--max-samples", "5"};
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
