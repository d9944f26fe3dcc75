#include "ktune/widgets/winner.h"

#include <QCoreApplication>
#include <QStringList>

#include "ktune/widgets/qt_types.h"

namespace ktune::gui {

namespace {
QString tr(const char* text) { return QCoreApplication::translate("Winner", text); }
}  // namespace

Winner Winner::of(const ProblemResult& result) {
  const Trial& best = *result.best;
  return Winner{result.problem.key(),       best.config, best.stats, result.choice, best.tflops, result.remeasured,
                conditions_of(best.metrics)};
}

Winner Winner::of(const ResultEntry& entry) {
  return Winner{entry.problem.key(), entry.config,     entry.stats,     entry.choice,
                entry.tflops,        entry.remeasured, entry.conditions};
}

std::vector<Winner> winnersOf(const RunResults& results) {
  std::vector<Winner> out;
  out.reserve(results.entries.size());
  for (const ResultEntry& e : results.entries) out.push_back(Winner::of(e));
  return out;
}

QString chosenByText(ChosenBy by) { return by == ChosenBy::Remeasure ? tr("re-measure") : tr("search"); }

QString Winner::numberText() const {
  const QString at = conditions.empty() ? QString() : tr(", at %1").arg(qstr(ktune::describe(conditions)));
  if (choice.by == ChosenBy::Remeasure)
    return tr("re-measured %1 (search %2)").arg(formatNs(stats.median_ns), formatNs(choice.search.median_ns)) + at;
  return tr("%1 in the search (not re-measured)").arg(formatNs(stats.median_ns)) + at;
}

QString Winner::flagsText() const {
  QStringList lines;
  for (const std::string& line : describe_flags(problemKey, stats, choice)) lines << coreText(line);
  return lines.join(QLatin1Char('\n'));
}

QString Winner::describe() const {
  QString text = tr("winner of %1: %2").arg(qstr(problemKey), numberText());
  if (round.size() > 1) {
    text += tr("\nre-measured in alternation:");
    for (const Remeasured& r : round)
      text += QStringLiteral("\n  %1: %2 (search %3)")
                  .arg(qstr(r.config.key()), formatNs(r.stats.median_ns), formatNs(r.search_median_ns)) +
              (r.conditions.empty() ? QString() : QStringLiteral(", at ") + qstr(ktune::describe(r.conditions)));
  }
  if (flagged()) text += QStringLiteral("\n\n") + flagsText();
  return text;
}

QIcon Winner::icon() const {
  return QIcon(flagged() ? QStringLiteral(":/icons/flagged.svg") : QStringLiteral(":/icons/winner.svg"));
}

}  // namespace ktune::gui
