#pragma once
// The search-space editor: parameters and candidate values, constraint expressions, and the
// size of the space before and after pruning, recounted live as the user types. Invalid values
// and expressions are marked in place (red cell, tooltip with the parser's message). Boolean
// parameters are edited as checkboxes, string ones as lists (ValuesDelegate); a space that is an
// explicit list of configs is shown as a read-only table, its constraints still editable.
#include <QAbstractTableModel>
#include <QFutureWatcher>
#include <QMap>
#include <QTimer>
#include <QWidget>
#include <optional>

#include "ktune/search_space.h"

class QLabel;
class QTableView;
class QTableWidget;

namespace ktune::gui {

class ParametersModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { NameColumn, ValuesColumn, DescriptionColumn, ColumnCount };
  using QAbstractTableModel::QAbstractTableModel;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role) override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  bool insertRows(int row, int count, const QModelIndex& parent = {}) override;
  bool removeRows(int row, int count, const QModelIndex& parent = {}) override;

  void setParameters(const std::vector<Parameter>& params);
  // Parses every row; a row that does not parse gets an error shown in place and is left out.
  std::vector<Parameter> parameters() const;
  bool hasErrors() const;
  // Why a row does not parse, or empty.
  QString rowError(int row) const;

 private:
  struct Row {
    QString name, values, description;
  };
  QList<Row> rows_;
};

class ConstraintsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { ExprColumn, DescriptionColumn, ColumnCount };
  using QAbstractTableModel::QAbstractTableModel;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role) override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  bool insertRows(int row, int count, const QModelIndex& parent = {}) override;
  bool removeRows(int row, int count, const QModelIndex& parent = {}) override;

  void setConstraints(const std::vector<Constraint>& constraints);
  std::vector<Constraint> constraints() const;  // blank rows left out
  // Marks rows (by index into constraints()) as invalid with the checker's message.
  void setIssues(const std::vector<ConstraintIssue>& issues);
  QString issue(int row) const { return issues_.value(row); }

 private:
  int constraintIndex(int row) const;  // row -> index in constraints(), -1 for blank rows
  struct Row {
    QString expr, description;
  };
  QList<Row> rows_;
  QMap<int, QString> issues_;  // keyed by row
};

struct SpaceCounts {
  std::uint64_t total = 0;
  std::optional<std::uint64_t> valid;  // summed over the problems; unset when not countable
  QString detail;                      // per-problem counts and constraint breakdown
};

class SpaceEditor : public QWidget {
  Q_OBJECT
 public:
  explicit SpaceEditor(QWidget* parent = nullptr);

  void setSpace(const SearchSpace& space);
  // The space as edited; throws InputError naming the first bad row or constraint.
  SearchSpace space() const;
  // Variables the constraints may use, one set per problem (device properties plus the
  // problem's key fields); counts are summed over them.
  void setContexts(std::vector<Variables> contexts);

  ParametersModel* parametersModel() { return &params_; }
  ConstraintsModel* constraintsModel() { return &constraints_; }
  // The space being edited is an explicit list of configs (shown in configsView()).
  bool isList() const { return !listConfigs_.empty(); }
  QTableWidget* configsView() const { return configsView_; }
  QTableView* parametersView() const { return paramsView_; }
  const SpaceCounts& counts() const { return counts_; }
  QString countsText() const;

  // Spaces above this many configs are not enumerated for the live count.
  static constexpr std::uint64_t kMaxCountedConfigs = 2'000'000;

 signals:
  void spaceEdited();
  void countsUpdated();

 private:
  void scheduleRecount();
  void recount();
  SearchSpace editedSpace() const;  // throws InputError naming the first bad row

  ParametersModel params_;
  ConstraintsModel constraints_;
  QTableView* paramsView_;
  QWidget* paramsBox_;  // the parameters table and its buttons, hidden for a list of configs
  QTableWidget* configsView_;
  std::vector<Parameter> listParams_;  // a list space's parameters and configs, as loaded
  std::vector<Config> listConfigs_;
  QTableView* constraintsView_;
  QLabel* countsLabel_;
  QTimer debounce_;
  std::vector<Variables> contexts_;
  SpaceCounts counts_;
  QFutureWatcher<SpaceCounts> watcher_;
};

}  // namespace ktune::gui
