#include "ktune/widgets/diff_model.h"

#include <QIcon>

#include "ktune/stats.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/trials_model.h"
#include "ktune/widgets/winner.h"

namespace ktune::gui {

QColor diffClassColor(DiffClass c) {
  switch (c) {
    case DiffClass::New:
      return QColor(0x15, 0x65, 0xc0);
    case DiffClass::Faster:
      return QColor(0x2e, 0x7d, 0x32);
    case DiffClass::Slower:
      return QColor(0xc6, 0x28, 0x28);
    case DiffClass::Same:
      return QColor(0x75, 0x75, 0x75);
    case DiffClass::NotComparable:
    case DiffClass::Unmeasured:
      return QColor(0xe6, 0x51, 0x00);
  }
  return Qt::black;
}

QColor flaggedColor() { return QColor(0xe6, 0x51, 0x00); }

QVariant flaggedIcon(bool flagged) {
  return flagged ? QVariant(QIcon(QStringLiteral(":/icons/flagged.svg"))) : QVariant();
}

QString speedUpText(double ratio) { return QStringLiteral("%1×").arg(ratio, 0, 'f', 3); }

namespace {

bool flagged(const DiffEntry& e) { return e.new_entry.flags.any(); }

}  // namespace

bool DiffModel::needsForce(DiffClass c) {
  return c == DiffClass::Slower || c == DiffClass::NotComparable || c == DiffClass::Unmeasured;
}

int DiffModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(diff_.entries.size());
}
int DiffModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant DiffModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  if (role == Qt::ToolTipRole && (section == OldColumn || section == NewColumn || section == ComparedColumn))
    return tr(
        "The two numbers the diff compares, always of one kind (\"Compared\" says which): the winners' "
        "re-measures, their searches' own medians, recorded medians, or a paired re-measure made here");
  if (role != Qt::DisplayRole) return {};
  switch (section) {
    case ApplyColumn:
      return tr("Apply");
    case KeyColumn:
      return tr("Key");
    case ClassColumn:
      return tr("Class");
    case OldConfigColumn:
      return tr("Registry config");
    case NewConfigColumn:
      return tr("Run's config");
    case OldColumn:
      return tr("Registry");
    case NewColumn:
      return tr("Run");
    case ComparedColumn:
      return tr("Compared");
    case RatioColumn:
      return tr("Speed-up");
  }
  return {};
}

Qt::ItemFlags DiffModel::flags(const QModelIndex& index) const {
  auto f = QAbstractTableModel::flags(index);
  const DiffEntry& e = diff_.entries[static_cast<std::size_t>(index.row())];
  if (index.column() != ApplyColumn || e.cls == DiffClass::Same) return f;
  // A flagged row's checkbox is greyed out until flagged entries are accepted.
  if (flagged(e) && !acceptFlagged_) return f & ~Qt::ItemIsEnabled;
  return f | Qt::ItemIsUserCheckable;
}

QString DiffModel::flagsText(const DiffEntry& e) { return flagsText(e.key, e.new_entry); }

QString DiffModel::flagsText(const std::string& key, const RegistryEntry& r) {
  // The registry entry keeps the deciding samples and the search's median: enough for the
  // core's own sentences.
  Stats chosen = summarize(r.samples_ns);
  if (r.samples_ns.empty()) chosen.median_ns = r.latency_median_ns;
  Choice choice;
  choice.by = r.chosen_by;
  choice.search.median_ns = r.search_median_ns;
  choice.flags = r.flags;
  QStringList lines;
  for (const std::string& line : describe_flags(key, chosen, choice)) lines << coreText(line);
  return lines.join(QLatin1Char('\n'));
}

QString DiffModel::comparedText(const DiffEntry& e) {
  if (!e.compared.empty()) return qstr(e.compared);
  return tr("%1 median").arg(chosenByText(e.new_entry.chosen_by));
}

QString DiffModel::conditionsText(const DiffEntry& e) {
  if (e.conditions_note.empty()) return {};
  // The core's sentence as the CLI prints it, so that both front ends say the same.
  return tr("%1. Re-measure times both configs side by side, at one clock.").arg(coreSentence(e.conditions_note));
}

QVariant DiffModel::toolTip(const DiffEntry& e, int column) const {
  QStringList parts;
  // The Key column shows what tells the keys apart; its tooltip has the whole key.
  if (column == KeyColumn) parts << qstr(e.family + " ") + keyLabels_.toolTip(e.key);
  if (const QString why = reason(e, column); !why.isEmpty()) parts << why;
  // Wherever a verdict or its numbers are read, the clocks they were taken at.
  if (column == ClassColumn || column >= OldColumn)
    if (const QString clocks = conditionsText(e); !clocks.isEmpty()) parts << clocks;
  return parts.isEmpty() ? QVariant() : QVariant(parts.join(QStringLiteral("\n\n")));
}

QString DiffModel::reason(const DiffEntry& e, int column) const {
  if (flagged(e) && (column == ApplyColumn || column == KeyColumn || column == NewColumn))
    return flagsText(e) + (acceptFlagged_ ? QString() : tr("\n\nCheck \"Accept flagged winners\" to apply it anyway."));
  if (e.paired && column >= OldColumn)
    return tr("Re-measured just now: both configs timed side by side in alternation on the run's device.");
  if (e.cls == DiffClass::Slower)
    return tr("The registry's entry is faster. Checking this row replaces it anyway, after a confirmation.");
  if (e.cls == DiffClass::Unmeasured)
    return tr(
        "The registry's entry has no measurement (imported without stats): nothing says which is faster. "
        "Re-measure times both; checking this row replaces the entry anyway, after a confirmation.");
  if (e.cls == DiffClass::NotComparable && e.old_entry)
    return tr("Measured %1 in this run, %2 in the registry: the medians do not say which is faster. "
              "Checking this row replaces the entry anyway, after a confirmation.")
        .arg(qstr(e.new_entry.benchmarking_method), qstr(e.old_entry->benchmarking_method));
  return {};
}

QVariant DiffModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const DiffEntry& e = diff_.entries[static_cast<std::size_t>(index.row())];
  const int column = index.column();
  switch (role) {
    case Qt::CheckStateRole:
      if (column != ApplyColumn || e.cls == DiffClass::Same) return {};
      return checked_.contains(index.row()) ? Qt::Checked : Qt::Unchecked;
    case Qt::ForegroundRole:
      if (column == ClassColumn) return diffClassColor(e.cls);
      // A ratio that carries the clocks reads in the colour of numbers that do not compare.
      if (column == RatioColumn && !e.conditions_note.empty()) return diffClassColor(DiffClass::NotComparable);
      return column == NewColumn && flagged(e) ? QVariant(flaggedColor()) : QVariant();
    case Qt::DecorationRole:
      return flaggedIcon((column == KeyColumn || column == NewColumn) && flagged(e));
    case FlaggedRole:
      return flagged(e);
    case ConditionsNoteRole:
      return qstr(e.conditions_note);
    case Qt::ToolTipRole:
      return toolTip(e, column);
    case Qt::DisplayRole:
      break;
    default:
      return {};
  }
  switch (column) {
    case KeyColumn:
      return keyLabels_.label(e.key);
    case ClassColumn:
      // The verdict's column, always in view (the Speed-up column may be scrolled off), says where
      // the clocks differ; the numbers are in the tooltip and beside the selected row's configs.
      return QString::fromLatin1(to_string(e.cls)) + (e.paired                     ? tr(" (paired)")
                                                      : !e.conditions_note.empty() ? tr(" (clocks differ)")
                                                                                   : QString());
    case OldConfigColumn:
      return e.old_entry ? registryText(changes(index.row())) : tr("(none)");
    case NewConfigColumn:
      return changesText(changes(index.row()));
    case OldColumn:
      return e.old_entry ? (e.old_ns > 0 ? formatNs(e.old_ns) : tr("unmeasured")) : QString();
    case NewColumn:
      return formatNs(e.new_ns);
    case ComparedColumn:
      return comparedText(e);
    case RatioColumn:
      return e.ratio > 0 ? speedUpText(e.ratio) : QString();
  }
  return {};
}

bool DiffModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!index.isValid() || index.column() != ApplyColumn || role != Qt::CheckStateRole) return false;
  const DiffEntry& e = diff_.entries[static_cast<std::size_t>(index.row())];
  if (e.cls == DiffClass::Same) return false;
  const bool check = value.value<Qt::CheckState>() == Qt::Checked;
  if (check && flagged(e) && !acceptFlagged_) return false;
  if (check && needsForce(e.cls) && !(confirm_ && confirm_(e))) return false;
  if (check)
    checked_.insert(index.row());
  else
    checked_.remove(index.row());
  emit dataChanged(index, index, {Qt::CheckStateRole});
  return true;
}

void DiffModel::setDiff(RegistryDiff diff) {
  beginResetModel();
  diff_ = std::move(diff);
  std::vector<std::string> keys;
  for (const DiffEntry& e : diff_.entries) keys.push_back(e.key);
  keyLabels_ = KeyLabels(keys);
  acceptFlagged_ = false;
  checked_.clear();
  for (std::size_t i = 0; i < diff_.entries.size(); ++i) {
    const DiffEntry& e = diff_.entries[i];
    if ((e.cls == DiffClass::New || e.cls == DiffClass::Faster) && !flagged(e)) checked_.insert(static_cast<int>(i));
  }
  endResetModel();
}

void DiffModel::setAcceptFlagged(bool accept) {
  if (accept == acceptFlagged_) return;
  acceptFlagged_ = accept;
  for (std::size_t i = 0; i < diff_.entries.size(); ++i)
    if (!accept && flagged(diff_.entries[i])) checked_.remove(static_cast<int>(i));
  if (rowCount() > 0)
    emit dataChanged(index(0, ApplyColumn), index(rowCount() - 1, NewColumn), {Qt::CheckStateRole, Qt::ToolTipRole});
}

std::vector<std::string> DiffModel::checkedKeys() const {
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < diff_.entries.size(); ++i)
    if (checked_.contains(static_cast<int>(i))) keys.push_back(diff_.entries[i].key);
  return keys;
}

bool DiffModel::forcedAny() const {
  for (int row : checked_)
    if (needsForce(diff_.entries[static_cast<std::size_t>(row)].cls)) return true;
  return false;
}

QStringList DiffModel::flaggedKeys() const {
  QStringList keys;
  for (const DiffEntry& e : diff_.entries)
    if (flagged(e)) keys << qstr(e.key);
  return keys;
}

std::vector<ParameterChange> DiffModel::changes(int row) const {
  const DiffEntry& e = diff_.entries[static_cast<std::size_t>(row)];
  return diffConfigs(e.old_entry ? std::optional<Config>(e.old_entry->config) : std::nullopt, e.new_entry.config,
                     trials_);
}

QString DiffModel::configText(const Config& config) const {
  return trials_ ? trials_->configText(config) : qstr(config.key());
}

}  // namespace ktune::gui
