#pragma once
// Core value types carried by queued signals, and the small conversions every page needs.
#include <QColor>
#include <QList>
#include <QMetaType>
#include <QString>

#include "ktune/trial.h"
#include "ktune/tuner.h"

Q_DECLARE_METATYPE(ktune::Trial)
Q_DECLARE_METATYPE(ktune::event::RunStarted)
Q_DECLARE_METATYPE(ktune::event::ProblemStarted)
Q_DECLARE_METATYPE(ktune::event::Progress)
Q_DECLARE_METATYPE(ktune::ProblemResult)
Q_DECLARE_METATYPE(ktune::RunSummary)
Q_DECLARE_METATYPE(ktune::TuneRequest)

class QLabel;

namespace ktune::gui {

// Registers the types above for queued connections; also loads the icon resources, which a
// static library cannot register on its own. Call once before building any widget.
void initialize();

inline QString qstr(const std::string& s) { return QString::fromStdString(s); }
inline std::string sstr(const QString& s) { return s.toStdString(); }

// One colour per status, shared by the table delegate and every chart so they read alike.
QColor statusColor(TrialStatus status);
QString statusLabel(TrialStatus status);

// "12.30 µs", "1.05 ms": latencies are stored in ns and shown in the unit that reads best, as the
// core's format_ns writes them.
QString formatNs(double ns);
// A sentence of the core's (describe_flags), with its times spelled as formatNs spells them.
QString coreText(const std::string& text);
// coreText of a clause of the core's ("old measured at 1980 MHz, ..."), begun as a sentence.
QString coreSentence(const std::string& text);
QString formatDuration(double seconds);  // "1 h 02 min", "3 min 05 s", "12.4 s"
// The text a hover or detail panel shows for one trial; `config` replaces the config's key
// (TrialsModel::configText, which shows string parameters as strings).
QString describeTrial(const Trial& trial, const QString& config = {});
// A page's status line: `text`, in red where it says what went wrong.
void showStatus(QLabel* label, const QString& text, bool error);

}  // namespace ktune::gui
