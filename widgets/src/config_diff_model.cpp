#include "ktune/widgets/config_diff_model.h"

#include <QColor>
#include <QFont>

#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/trials_model.h"

namespace ktune::gui {

namespace {

const QColor kChanged(0xc6, 0x28, 0x28);

QString valueText(const std::string& name, const ParamValue& value, const TrialsModel* text) {
  return text ? text->parameterText(name, value) : qstr(value.text());
}

}  // namespace

std::vector<ParameterChange> diffConfigs(const std::optional<Config>& registry, const Config& run,
                                         const TrialsModel* text) {
  std::vector<ParameterChange> out;
  for (const auto& [name, value] : run.values()) {
    ParameterChange c{qstr(name), {}, valueText(name, value, text), false, true, false};
    if (registry && registry->has(name)) {
      c.registry = valueText(name, registry->value(name), text);
      c.inRegistry = true;
      c.changed = !(registry->value(name) == value);
    } else {
      c.changed = registry.has_value();
    }
    out.push_back(std::move(c));
  }
  if (registry)
    for (const auto& [name, value] : registry->values())
      if (!run.has(name)) out.push_back({qstr(name), valueText(name, value, text), {}, true, false, true});
  return out;
}

QString changesText(const std::vector<ParameterChange>& changes) {
  QStringList parts;
  for (const ParameterChange& c : changes) {
    if (!c.inRun) continue;  // only the registry has it: the registry's cell says so
    parts << (c.changed && c.inRegistry ? QStringLiteral("%1=%2→%3").arg(c.name, c.registry, c.run)
                                        : QStringLiteral("%1=%2").arg(c.name, c.run));
  }
  return parts.join(QStringLiteral(", "));
}

QString registryText(const std::vector<ParameterChange>& changes) {
  QStringList parts;
  for (const ParameterChange& c : changes)
    if (c.inRegistry) parts << QStringLiteral("%1=%2").arg(c.name, c.registry);
  return parts.join(QStringLiteral(", "));
}

int ConfigDiffModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(changes_.size());
}

int ConfigDiffModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant ConfigDiffModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case ParameterColumn:
      return tr("Parameter");
    case RegistryColumn:
      return registryTitle_;
    case RunColumn:
      return runTitle_;
  }
  return {};
}

void ConfigDiffModel::setSideTitles(const QString& registry, const QString& run) {
  registryTitle_ = registry;
  runTitle_ = run;
  emit headerDataChanged(Qt::Horizontal, RegistryColumn, RunColumn);
}

QVariant ConfigDiffModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const ParameterChange& c = changes_[static_cast<std::size_t>(index.row())];
  switch (role) {
    case ChangedRole:
      return c.changed;
    case Qt::FontRole: {
      if (!c.changed) return {};
      QFont bold;
      bold.setBold(true);
      return bold;
    }
    case Qt::ForegroundRole:
      return c.changed && index.column() == RunColumn ? QVariant(kChanged) : QVariant();
    case Qt::ToolTipRole:
      return c.changed ? tr("Changed: %1 has %2, %3 has %4")
                             .arg(registryTitle_.toLower(), c.inRegistry ? c.registry : tr("no %1").arg(c.name),
                                  runTitle_.toLower(), c.inRun ? c.run : tr("no %1").arg(c.name))
                       : QVariant();
    case Qt::DisplayRole:
      switch (index.column()) {
        case ParameterColumn:
          return c.changed ? QStringLiteral("≠ %1").arg(c.name) : c.name;
        case RegistryColumn:
          return c.inRegistry ? c.registry : QStringLiteral("—");
        case RunColumn:
          return c.inRun ? c.run : QStringLiteral("—");
      }
      return {};
    default:
      return {};
  }
}

void ConfigDiffModel::setChanges(std::vector<ParameterChange> changes) {
  beginResetModel();
  changes_ = std::move(changes);
  endResetModel();
}

int ConfigDiffModel::changedCount() const {
  int n = 0;
  for (const ParameterChange& c : changes_) n += c.changed;
  return n;
}

}  // namespace ktune::gui
