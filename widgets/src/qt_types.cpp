#include "ktune/widgets/qt_types.h"

#include <QLabel>
#include <QRegularExpression>
#include <QResource>
#include <cmath>

#include "ktune/winner.h"

static void loadResources() { Q_INIT_RESOURCE(workbench); }

namespace ktune::gui {

void initialize() {
  static bool done = false;
  if (done) return;
  done = true;
  loadResources();
  qRegisterMetaType<ktune::Trial>();
  qRegisterMetaType<QList<ktune::Trial>>();
  qRegisterMetaType<ktune::event::RunStarted>();
  qRegisterMetaType<ktune::event::ProblemStarted>();
  qRegisterMetaType<ktune::event::Progress>();
  qRegisterMetaType<ktune::ProblemResult>();
  qRegisterMetaType<ktune::RunSummary>();
  qRegisterMetaType<ktune::TuneRequest>();
}

QColor statusColor(TrialStatus status) {
  switch (status) {
    case TrialStatus::Ok:
      return QColor(0x2e, 0x7d, 0x32);
    case TrialStatus::Pruned:
      return QColor(0x9e, 0x9e, 0x9e);
    case TrialStatus::CompileError:
      return QColor(0x8e, 0x24, 0xaa);
    case TrialStatus::LaunchError:
      return QColor(0xef, 0x6c, 0x00);
    case TrialStatus::WrongResult:
      return QColor(0xc6, 0x28, 0x28);
    case TrialStatus::Timeout:
      return QColor(0x6d, 0x4c, 0x41);
    case TrialStatus::Crashed:
      return QColor(0xad, 0x14, 0x57);
    case TrialStatus::SlowAbort:
      return QColor(0x15, 0x65, 0xc0);
  }
  return Qt::black;
}

QString statusLabel(TrialStatus status) { return QString::fromLatin1(to_string(status)); }

QString formatNs(double ns) {
  if (!(ns > 0)) return QStringLiteral("–");
  // The core's spelling, digit for digit, so a number reads the same here as in the CLI's summary.
  return coreText(format_ns(ns));
}

QString coreText(const std::string& text) {
  // format_ns writes ASCII "us" for a terminal; a window can show the µ.
  static const QRegularExpression us(QStringLiteral("(\\d) us\\b"));
  return qstr(text).replace(us, QStringLiteral("\\1 µs"));
}

QString coreSentence(const std::string& text) {
  QString s = coreText(text);
  if (!s.isEmpty()) s[0] = s[0].toUpper();
  return s;
}

QString formatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return QStringLiteral("–");
  if (seconds < 60) return QStringLiteral("%1 s").arg(seconds, 0, 'f', 1);
  const auto total = static_cast<long long>(seconds + 0.5);
  if (total < 3600) return QStringLiteral("%1 min %2 s").arg(total / 60).arg(total % 60, 2, 10, QLatin1Char('0'));
  return QStringLiteral("%1 h %2 min").arg(total / 3600).arg((total % 3600) / 60, 2, 10, QLatin1Char('0'));
}

QString describeTrial(const Trial& t, const QString& config) {
  QString text = QStringLiteral("#%1  %2\n%3\nstatus: %4")
                     .arg(t.id)
                     .arg(qstr(t.problem_key), config.isEmpty() ? qstr(t.config.key()) : config, statusLabel(t.status));
  if (t.stats.count > 0) {
    text += QStringLiteral("\nmedian %1  mean %2  std %3  min %4  (n=%5)")
                .arg(formatNs(t.stats.median_ns), formatNs(t.stats.mean_ns), formatNs(t.stats.std_ns),
                     formatNs(t.stats.min_ns))
                .arg(t.stats.count);
    if (t.tflops > 0) text += QStringLiteral("\n%1 TFLOP/s").arg(t.tflops, 0, 'g', 4);
    if (t.gbps > 0) text += QStringLiteral("  %1 GB/s").arg(t.gbps, 0, 'g', 4);
  }
  for (const auto& [name, value] : t.metrics) text += QStringLiteral("\n%1: %2").arg(qstr(name)).arg(value, 0, 'g', 5);
  if (t.compile_time_s > 0) text += QStringLiteral("\ncompile %1 s").arg(t.compile_time_s, 0, 'f', 3);
  if (!t.error.empty()) text += QStringLiteral("\n") + qstr(t.error);
  return text;
}

void showStatus(QLabel* label, const QString& text, bool error) {
  label->setText(text);
  label->setStyleSheet(error ? QStringLiteral("color:#c62828") : QString());
}

}  // namespace ktune::gui
