#pragma once
// TrialsModel: every trial of a run as a table. Rows are appended in batches (one
// beginInsertRows per batch) so a live run of 100k trials stays cheap to show.
#include <QAbstractTableModel>
#include <QFont>
#include <QHash>
#include <QSet>
#include <QStringList>
#include <map>
#include <vector>

#include "ktune/problem.h"
#include "ktune/run_store.h"
#include "ktune/trial.h"
#include "ktune/widgets/key_labels.h"
#include "ktune/widgets/trial_brush.h"
#include "ktune/widgets/winner.h"

namespace ktune::gui {

class TrialsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  // WinnerRole: true on the row of its problem's winner (the search trial of the config the core
  // chose); that row's numbers stay its search's.
  enum Role { TrialIdRole = Qt::UserRole + 1, StatusRole, ProblemKeyRole, SortRole, WinnerRole };
  // Fixed columns; parameter columns sit between Status and Median. Pass is the shape's `pass`
  // key field (grouped_gemm's fwd / dX / dW), empty for families without one.
  enum Column { IdColumn, ShapeColumn, PassColumn, StatusColumn, FirstParamColumn };

  explicit TrialsModel(QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // Starts over with these parameter columns (the space's order) and no rows.
  void reset(const QStringList& parameters);
  // Replaces everything in one model reset: opening a saved run.
  void setTrials(const QStringList& parameters, std::vector<Trial> trials);
  // One beginInsertRows for the whole batch. Parameters not seen before become new columns.
  void appendTrials(const QList<Trial>& batch);

  // Pruned configs never ran: a run keeps a count per problem and constraint (ProblemPruning),
  // and they become rows only when asked for (listPruned), re-enumerated from the space.
  void setPruning(SearchSpace space, std::vector<ProblemPruning> pruning);
  void addPruning(ProblemPruning pruning);  // a live run's next problem
  std::uint64_t prunedCount() const;        // pruned configs, listed or not
  std::uint64_t plannedCount() const;       // configs the strategy measures; 0 when unknown
  // Appends the pruned configs not listed yet (ids below -1); idempotent.
  void listPruned();

  // The core's winner of each problem: a reopened run's results.json, or a live run's results as
  // each problem ends. reset() clears them; setTrials() keeps them.
  void setWinners(const std::vector<Winner>& winners);
  void addResult(const ProblemResult& result);
  const Winner* winner(const std::string& problemKey) const;
  const std::map<std::string, Winner, KeyLess>& winners() const { return winners_; }
  // The row of the winner's search trial (Choice::trial_id; the same config where results.json
  // predates the id), or -1 while it is not listed.
  int winnerRow(const std::string& problemKey) const;

  const std::vector<Trial>& trials() const { return trials_; }
  const Trial& trial(int row) const { return trials_[static_cast<std::size_t>(row)]; }
  int rowForId(qint64 id) const { return rowById_.value(id, -1); }
  const QStringList& parameters() const { return parameters_; }
  // Every shape seen, in key order (compare_keys: M=64 before M=256).
  QStringList problemKeys() const { return problemKeys_; }
  // Those shapes by what tells them apart (the Shape column, shape pickers, legends).
  const KeyLabels& keyLabels() const { return keyLabels_; }
  // The `pass` values of those shapes (fwd, dX, dW first, in Unsloth's order); empty when the
  // family has no pass.
  QStringList passes() const;
  // The `pass=` field of a problem key, or "" without one.
  static QString passOf(const std::string& problemKey);
  int parameterColumn(const QString& name) const;
  // A parameter's value as the user wrote it: 64, true, .cg ("" for the empty string).
  QString parameterText(const std::string& name, const ParamValue& value) const;
  QString configText(const Config& config) const;  // "block=64,order=row"
  QString describe(const Trial& trial) const;      // describeTrial() with configText()
  // Names of the numbers trials recorded beside their time (Trial::metrics), sorted.
  const QStringList& metricNames() const { return metricNames_; }
  // The run's name, for what leaves the workbench (exported charts' titles); set by RunDocument.
  void setRunName(const QString& name) { runName_ = name; }
  const QString& runName() const { return runName_; }
  // The trials brushed on the Analyse page, shared by every page that shows this model's trials;
  // cleared when the model is reset or given other trials.
  TrialBrush* brush() const { return brush_; }

  // Value used to sort a column: numbers for numeric columns, text otherwise.
  QVariant sortValue(int row, int column) const;
  // Orders two rows by a column without building QVariants (sorting 100k rows); < 0, 0, > 0.
  int compare(int rowA, int rowB, int column) const;

 signals:
  void problemKeysChanged();
  void pruningChanged();
  void metricNamesChanged();
  void winnersChanged();

 private:
  enum Tail { Median, Mean, Std, Min, Samples, Tflops, Gbps, Compile, Error, TailCount };
  int tailColumn(int column) const { return column - FirstParamColumn - static_cast<int>(parameters_.size()); }
  void noteProblemKey(const std::string& key);
  void addParameters(const Trial& t);
  bool noteMetrics(const Trial& t);  // true when a name was new
  // Finds the rows of the winners not found yet, looking from `fromRow` on (the rows before were
  // searched already), and announces them; true when it found one.
  bool locateWinners(int fromRow);
  void forgetWinner(const std::string& problemKey);  // and unmarks its row
  void announceRow(int row);
  QString describeWinnerRow(const Trial& trial) const;
  static QFont winnerFont();

  std::vector<Trial> trials_;
  QStringList parameters_;
  QStringList problemKeys_;
  KeyLabels keyLabels_;
  QStringList metricNames_;
  QString runName_;
  TrialBrush* brush_;
  QHash<qint64, int> rowById_;
  std::map<std::string, Winner, KeyLess> winners_;
  std::map<std::string, int, KeyLess> winnerRows_;
  QSet<int> winnerRowSet_;
  SearchSpace space_;
  std::vector<ProblemPruning> pruning_;
  std::size_t prunedListed_ = 0;  // records of pruning_ whose configs are rows
  // Listed pruned configs get ids -2, -3, ...: -1 stays "no trial" for the views.
  static constexpr qint64 kFirstPrunedId = -2;
  qint64 nextPrunedId_ = kFirstPrunedId;
};

}  // namespace ktune::gui
