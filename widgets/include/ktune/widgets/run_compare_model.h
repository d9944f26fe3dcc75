#pragma once
// RunCompareModel: the Apply page's comparison of two runs (compare_runs), a shape a row: what the
// two winners' numbers say (faster, slower, the same within noise, not comparable), the config
// this run chose with each value the other run chose differently after an arrow ("BN=32→64"),
// each run's number and the noise of the samples it was chosen by, and the speed-up. Shapes that
// only one run tuned say so. A comparison, not a diff to apply: nothing here is checkable.
#include <QAbstractTableModel>
#include <vector>

#include "ktune/diff.h"
#include "ktune/widgets/config_diff_model.h"
#include "ktune/widgets/key_labels.h"

namespace ktune::gui {

class TrialsModel;

class RunCompareModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    KeyColumn,
    VerdictColumn,
    ConfigColumn,    // this run's config, the other's values of changed parameters before an arrow
    RunColumn,       // ComparedShape::run_ns
    RunNoiseColumn,  // of the samples this run's winner was chosen by
    OtherColumn,     // ComparedShape::other_ns
    OtherNoiseColumn,
    RatioColumn,     // other ÷ this run: > 1, this run is faster
    ComparedColumn,  // which numbers: re-measure medians, search medians, ...
    ColumnCount
  };
  enum Role { ClassRole = Qt::UserRole + 1 };  // DiffClass; -1 for a shape of one run
  using QAbstractTableModel::QAbstractTableModel;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

  // `otherName`: the other run's name, for the rows it alone has.
  void setComparison(RunComparison comparison, const QString& otherName);
  const RunComparison& comparison() const { return comparison_; }
  // Configs read as the trials table shows them (string parameters as strings).
  void setConfigText(const TrialsModel* trials) { trials_ = trials; }
  // A row's two configs parameter by parameter, the other run on the registry's side.
  std::vector<ParameterChange> changes(int row) const;
  const KeyLabels& keyLabels() const { return keyLabels_; }
  // "faster", "same within noise (±2.0 %)", "only in this run", "only in before".
  QString verdictText(const ComparedShape& shape) const;
  // The core's note where the two numbers were taken at SM clocks apart, as a sentence; empty
  // where they were not.
  static QString conditionsText(const ComparedShape& shape);
  // The relative standard error of a winner's deciding samples after outliers (what the run's
  // noise target is held against, and what flags a winner noisy); NaN without two samples.
  static double noiseOf(const RegistryEntry& entry);

 private:
  QVariant toolTip(int row, int column) const;
  RunComparison comparison_;
  QString otherName_;
  KeyLabels keyLabels_;
  const TrialsModel* trials_ = nullptr;
};

}  // namespace ktune::gui
