#pragma once
// ConfigDiffModel: one Apply-page row's configs side by side, a parameter a row: the registry's
// value and the run's, in the run's parameter order (the space's; a registry file keeps its
// own, alphabetical), parameters only the registry has last, changed values marked. The Apply
// table's config cells are too narrow for a config of ten parameters; this panel shows all. A
// comparison of two runs shows the other run in the registry's place (setSideTitles).
#include <QAbstractTableModel>
#include <optional>
#include <vector>

#include "ktune/config.h"

namespace ktune::gui {

class TrialsModel;

// One parameter of the two configs.
struct ParameterChange {
  QString name;
  QString registry;  // the registry's value, where inRegistry
  QString run;       // the run's value, where inRun
  bool inRegistry = false;
  bool inRun = false;
  bool changed = false;  // the registry has an entry and its value differs (or one config lacks it)
};

// The two configs parameter by parameter, in the run's order, then what only the registry has.
// Values read as `text` shows them (TrialsModel::parameterText); without it as the core writes them.
std::vector<ParameterChange> diffConfigs(const std::optional<Config>& registry, const Config& run,
                                         const TrialsModel* text = nullptr);
// "BM=64, BN=32→64, unroll=4": the run's config in its order, each changed value after the
// registry's and an arrow, for a table cell.
QString changesText(const std::vector<ParameterChange>& changes);
// The registry's config in the same order, for the cell beside it.
QString registryText(const std::vector<ParameterChange>& changes);

class ConfigDiffModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { ParameterColumn, RegistryColumn, RunColumn, ColumnCount };
  enum Role { ChangedRole = Qt::UserRole + 1 };
  using QAbstractTableModel::QAbstractTableModel;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

  void setChanges(std::vector<ParameterChange> changes);
  // The two columns' names, "Registry" and "Run" unless set: "Other run" and "This run".
  void setSideTitles(const QString& registry, const QString& run);
  const std::vector<ParameterChange>& changes() const { return changes_; }
  int changedCount() const;

 private:
  std::vector<ParameterChange> changes_;
  QString registryTitle_ = tr("Registry"), runTitle_ = tr("Run");
};

}  // namespace ktune::gui
