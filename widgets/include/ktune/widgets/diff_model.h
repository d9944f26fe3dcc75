#pragma once
// DiffModel: the Apply page's table, a run's results against the registry key by key, with the
// two numbers the diff compared and which they are (re-measure, search, recorded or paired
// medians), and a checkbox per key: new and faster keys come checked, slower and not comparable
// ones ask for a confirmation, and flagged ones (a noisy winner, a re-measure far off its search)
// stay unchecked and cannot be checked until the user accepts flagged winners. A verdict whose two
// numbers were taken at SM clocks apart (DiffEntry::conditions_note) says so beside its class.
#include <QAbstractTableModel>
#include <QSet>
#include <functional>
#include <string>
#include <vector>

#include "ktune/diff.h"
#include "ktune/widgets/config_diff_model.h"
#include "ktune/widgets/key_labels.h"

namespace ktune::gui {

class TrialsModel;

// One colour per class, shared by the Apply page's tables: new blue, faster green, slower red.
QColor diffClassColor(DiffClass c);
// A flagged winner's cells in those tables: their text colour, and the flag icon where `flagged`
// (an empty variant otherwise, as a model's DecorationRole wants it).
QColor flaggedColor();
QVariant flaggedIcon(bool flagged);
// "1.234×": one number over the other, as both tables' Speed-up columns show it.
QString speedUpText(double ratio);

class DiffModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    ApplyColumn,
    KeyColumn,
    ClassColumn,
    OldConfigColumn,
    NewConfigColumn,
    OldColumn,  // DiffEntry::old_ns
    NewColumn,  // DiffEntry::new_ns
    ComparedColumn,
    RatioColumn,
    ColumnCount
  };
  enum Role {
    FlaggedRole = Qt::UserRole + 1,
    ConditionsNoteRole,  // DiffEntry::conditions_note (any column), empty when the clocks agree
  };
  using QAbstractTableModel::QAbstractTableModel;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role) override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;

  // A new diff starts with flagged entries not accepted.
  void setDiff(RegistryDiff diff);
  const RegistryDiff& diff() const { return diff_; }
  // Asked before a slower or not comparable row is checked; returning false leaves it unchecked.
  void setConfirmForce(std::function<bool(const DiffEntry&)> confirm) { confirm_ = std::move(confirm); }
  // Flagged rows become checkable (still unchecked); turning it off unchecks them.
  void setAcceptFlagged(bool accept);
  bool acceptFlagged() const { return acceptFlagged_; }
  // Configs read as the run's trials table shows them (string parameters as strings).
  void setConfigText(const TrialsModel* trials) { trials_ = trials; }
  QString configText(const Config& config) const;
  // A row's registry and run configs parameter by parameter, in the run's order.
  std::vector<ParameterChange> changes(int row) const;
  // The keys by what tells them apart (the Key column; the whole key in its tooltip).
  const KeyLabels& keyLabels() const { return keyLabels_; }

  std::vector<std::string> checkedKeys() const;
  bool forcedAny() const;  // a checked row is slower or not comparable (the user confirmed it)
  // Slower and not comparable rows replace an entry only when forced.
  static bool needsForce(DiffClass c);
  bool isChecked(int row) const { return checked_.contains(row); }
  QStringList flaggedKeys() const;  // keys whose run entry is flagged
  // Why the run's entry is flagged (describe_flags), one sentence a line.
  static QString flagsText(const DiffEntry& e);
  static QString flagsText(const std::string& key, const RegistryEntry& entry);
  // "re-measure medians", or for a new key the run's own: "re-measure median".
  static QString comparedText(const DiffEntry& e);
  // The core's note as a sentence, with what settles it; empty where the clocks agree.
  static QString conditionsText(const DiffEntry& e);

 private:
  QVariant toolTip(const DiffEntry& e, int column) const;
  // Why a row reads as it does (flagged, paired, slower, not comparable), or empty.
  QString reason(const DiffEntry& e, int column) const;
  RegistryDiff diff_;
  KeyLabels keyLabels_;
  QSet<int> checked_;
  std::function<bool(const DiffEntry&)> confirm_;
  const TrialsModel* trials_ = nullptr;
  bool acceptFlagged_ = false;
};

}  // namespace ktune::gui
