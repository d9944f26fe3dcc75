#pragma once
// Sorting and filtering of the trials table by status, shape, pass (fwd / dX / dW), free text,
// whether a row is its problem's winner, and a set of trials (those brushed on the Analyse page).
#include <QSet>
#include <QSortFilterProxyModel>

#include "ktune/trial.h"

namespace ktune::gui {

class TrialsModel;

class TrialsFilterProxy : public QSortFilterProxyModel {
  Q_OBJECT
 public:
  explicit TrialsFilterProxy(QObject* parent = nullptr);
  void setSourceModel(QAbstractItemModel* model) override;

  // Empty set: every status but Pruned. Pruned configs never ran and a run records thousands of
  // them, so they show only when Pruned is among the statuses asked for.
  void setStatuses(const QSet<TrialStatus>& statuses);
  // Empty: every shape; otherwise an exact Problem::key().
  void setShape(const QString& problemKey);
  // Empty: every pass; otherwise the shapes whose `pass` key field is this (grouped_gemm's
  // fwd, dX, dW).
  void setPass(const QString& pass);
  // Case-insensitive substring of the config key, the shape or the error text.
  void setText(const QString& text);
  // Only the rows of the problems' winners (TrialsModel::WinnerRole).
  void setWinnersOnly(bool on);
  // Only these trials (by id), until setOnlyTrials(false, {}).
  void setOnlyTrials(bool on, const QSet<qint64>& ids = {});

  QSet<TrialStatus> statuses() const { return statuses_; }
  QString shape() const { return shape_; }
  QString pass() const { return pass_; }
  QString text() const { return text_; }
  bool winnersOnly() const { return winnersOnly_; }
  bool onlyTrials() const { return onlyTrials_; }

 protected:
  bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;
  bool lessThan(const QModelIndex& left, const QModelIndex& right) const override;

 private:
  TrialsModel* trials_ = nullptr;
  QSet<TrialStatus> statuses_;
  QString shape_;
  QString pass_;
  QString text_;
  bool winnersOnly_ = false;
  bool onlyTrials_ = false;
  QSet<qint64> trialIds_;
};

}  // namespace ktune::gui
