#include "ktune/widgets/run_compare_model.h"

#include <cmath>
#include <limits>

#include "ktune/stats.h"
#include "ktune/widgets/diff_model.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/winner.h"

namespace ktune::gui {

namespace {

const QColor kAlone(0x75, 0x75, 0x75);

QString noiseText(const std::optional<RegistryEntry>& entry) {
  if (!entry) return {};
  const double noise = RunCompareModel::noiseOf(*entry);
  return std::isfinite(noise) ? QStringLiteral("±%1 %").arg(100 * noise, 0, 'f', 2) : QStringLiteral("–");
}

}  // namespace

double RunCompareModel::noiseOf(const RegistryEntry& entry) {
  return entry.samples_ns.size() >= 2 ? robust_rel_error(entry.samples_ns) : std::numeric_limits<double>::quiet_NaN();
}

int RunCompareModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(comparison_.shapes.size());
}

int RunCompareModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant RunCompareModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  if (role == Qt::ToolTipRole) {
    if (section == RunNoiseColumn || section == OtherNoiseColumn)
      return tr(
          "Noise of the samples each winner was chosen by: the relative standard error of their mean after "
          "dropping outliers beyond 3 robust sigmas, what a run's noise target is held against");
    if (section == RatioColumn) return tr("The other run's number over this run's: above 1, this run is faster");
    if (section == ConfigColumn)
      return tr(
          "The parameters the two winners set differently, the other run's value first: BN=32→64 (a shape of "
          "one run: its whole config)");
    return {};
  }
  if (role != Qt::DisplayRole) return {};
  switch (section) {
    case KeyColumn:
      return tr("Shape");
    case VerdictColumn:
      return tr("This run is");
    case ConfigColumn:
      return tr("Config differences (other → this)");
    case RunColumn:
      return tr("This run");
    case RunNoiseColumn:
    case OtherNoiseColumn:
      return tr("Noise");
    case OtherColumn:
      return tr("Other run");
    case RatioColumn:
      return tr("Speed-up");
    case ComparedColumn:
      return tr("Compared");
  }
  return {};
}

QString RunCompareModel::verdictText(const ComparedShape& s) const {
  if (!s.other) return tr("only in this run");
  if (!s.run) return tr("only in %1").arg(otherName_);
  if (s.cls == DiffClass::NotComparable) return tr("not comparable");
  // As the Apply page marks a verdict whose two numbers were taken at clocks apart.
  const QString clocks = s.conditions_note.empty() ? QString() : tr(" (clocks differ)");
  if (s.cls == DiffClass::Same) return tr("same within noise (±%1 %)").arg(100 * s.threshold, 0, 'f', 1) + clocks;
  return QString::fromLatin1(to_string(s.cls)) + clocks;
}

QString RunCompareModel::conditionsText(const ComparedShape& s) {
  if (s.conditions_note.empty()) return {};
  return tr("%1. Runs compare their configs alone only where they ran at one clock.")
      .arg(coreSentence(s.conditions_note));
}

QVariant RunCompareModel::toolTip(int row, int column) const {
  const ComparedShape& s = comparison_.shapes[static_cast<std::size_t>(row)];
  switch (column) {
    case KeyColumn:
      return keyLabels_.toolTip(s.key);
    case VerdictColumn:
      if (s.cls == DiffClass::NotComparable)
        return tr("Measured %1 in this run, %2 in %3: the medians do not say which is faster")
            .arg(qstr(s.run->benchmarking_method), qstr(s.other->benchmarking_method), otherName_);
      if (s.both()) {
        QString text = tr("The two numbers differ by %1 %; within %2 % they count as the same (the larger of 2 % and "
                          "twice their combined noise)")
                           .arg(100 * (std::max(s.ratio, 1 / s.ratio) - 1), 0, 'f', 1)
                           .arg(100 * s.threshold, 0, 'f', 1);
        if (const QString clocks = conditionsText(s); !clocks.isEmpty()) text += QStringLiteral("\n\n") + clocks;
        return text;
      }
      return {};
    case RatioColumn:
      return conditionsText(s);
    case RunColumn:
    case OtherColumn: {
      const auto& entry = column == RunColumn ? s.run : s.other;
      if (!entry) return {};
      QString text =
          tr("%1 of run %2; chosen by %3").arg(qstr(s.compared), qstr(entry->run), chosenByText(entry->chosen_by));
      if (entry->flags.any()) text += QStringLiteral("\n\n") + DiffModel::flagsText(s.key, *entry);
      return text;
    }
    case ConfigColumn: {
      QStringList runs, others;
      for (const ParameterChange& c : changes(row)) {
        if (c.inRun) runs << QStringLiteral("%1=%2").arg(c.name, c.run);
        if (c.inRegistry) others << QStringLiteral("%1=%2").arg(c.name, c.registry);
      }
      QStringList lines;
      if (s.run) lines << tr("this run: %1").arg(runs.join(QStringLiteral(", ")));
      if (s.other) lines << tr("other run: %1").arg(others.join(QStringLiteral(", ")));
      return lines.join(QLatin1Char('\n'));
    }
    case RunNoiseColumn:
    case OtherNoiseColumn: {
      const auto& entry = column == RunNoiseColumn ? s.run : s.other;
      if (!entry) return {};
      return entry->samples_ns.size() >= 2 ? tr("from the %1 samples it was chosen by").arg(entry->samples_ns.size())
                                           : tr("fewer than two samples kept: no noise to tell");
    }
    default:
      return {};
  }
}

QVariant RunCompareModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const ComparedShape& s = comparison_.shapes[static_cast<std::size_t>(index.row())];
  const int column = index.column();
  const auto flagged = [&](const std::optional<RegistryEntry>& e) { return e && e->flags.any(); };
  const bool flaggedCell = (column == RunColumn && flagged(s.run)) || (column == OtherColumn && flagged(s.other));
  switch (role) {
    case ClassRole:
      return s.both() ? static_cast<int>(s.cls) : -1;
    case Qt::ToolTipRole:
      return toolTip(index.row(), column);
    case Qt::ForegroundRole:
      if (column == VerdictColumn) return s.both() ? diffClassColor(s.cls) : kAlone;
      // As on the Apply page: a ratio that carries the clocks reads in the colour of numbers that do not compare.
      if (column == RatioColumn && !s.conditions_note.empty()) return diffClassColor(DiffClass::NotComparable);
      return flaggedCell ? QVariant(flaggedColor()) : QVariant();
    case Qt::DecorationRole:
      return flaggedIcon(flaggedCell);
    case Qt::DisplayRole:
      break;
    default:
      return {};
  }
  switch (column) {
    case KeyColumn:
      return keyLabels_.label(s.key);
    case VerdictColumn:
      return verdictText(s);
    case ConfigColumn: {
      // What differs: the whole configs are in the tooltip and the panel beside the table.
      std::vector<ParameterChange> c = changes(index.row());
      if (!s.both()) return s.run ? changesText(c) : registryText(c);
      std::erase_if(c, [](const ParameterChange& p) { return !p.changed; });
      return c.empty() ? tr("the same config") : changesText(c);
    }
    case RunColumn:
      return s.run ? formatNs(s.run_ns) : QString();
    case RunNoiseColumn:
      return noiseText(s.run);
    case OtherColumn:
      return s.other ? formatNs(s.other_ns) : QString();
    case OtherNoiseColumn:
      return noiseText(s.other);
    case RatioColumn:
      return s.both() ? speedUpText(s.ratio) : QString();
    case ComparedColumn:
      return qstr(s.compared);
  }
  return {};
}

void RunCompareModel::setComparison(RunComparison comparison, const QString& otherName) {
  beginResetModel();
  comparison_ = std::move(comparison);
  otherName_ = otherName;
  std::vector<std::string> keys;
  for (const ComparedShape& s : comparison_.shapes) keys.push_back(s.key);
  keyLabels_ = KeyLabels(keys);
  endResetModel();
}

std::vector<ParameterChange> RunCompareModel::changes(int row) const {
  const ComparedShape& s = comparison_.shapes[static_cast<std::size_t>(row)];
  if (s.run)
    return diffConfigs(s.other ? std::optional<Config>(s.other->config) : std::nullopt, s.run->config, trials_);
  // Only the other run has it: its config, on its own side.
  std::vector<ParameterChange> out = diffConfigs(std::nullopt, s.other->config, trials_);
  for (ParameterChange& c : out) {
    std::swap(c.registry, c.run);
    std::swap(c.inRegistry, c.inRun);
  }
  return out;
}

}  // namespace ktune::gui
