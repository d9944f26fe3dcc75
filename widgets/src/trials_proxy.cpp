#include "ktune/widgets/trials_proxy.h"

#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/trials_model.h"

namespace ktune::gui {

TrialsFilterProxy::TrialsFilterProxy(QObject* parent) : QSortFilterProxyModel(parent) { setDynamicSortFilter(true); }

void TrialsFilterProxy::setSourceModel(QAbstractItemModel* model) {
  trials_ = qobject_cast<TrialsModel*>(model);
  Q_ASSERT_X(trials_, "TrialsFilterProxy", "the source must be a TrialsModel");
  QSortFilterProxyModel::setSourceModel(model);
  // A winner's row changes only its roles, which dynamic filtering does not watch.
  connect(trials_, &TrialsModel::winnersChanged, this, [this] {
    if (winnersOnly_) invalidateRowsFilter();
  });
}

void TrialsFilterProxy::setStatuses(const QSet<TrialStatus>& statuses) {
  if (statuses == statuses_) return;
  statuses_ = statuses;
  invalidateRowsFilter();
}

void TrialsFilterProxy::setShape(const QString& problemKey) {
  if (problemKey == shape_) return;
  shape_ = problemKey;
  invalidateRowsFilter();
}

void TrialsFilterProxy::setPass(const QString& pass) {
  if (pass == pass_) return;
  pass_ = pass;
  invalidateRowsFilter();
}

void TrialsFilterProxy::setText(const QString& text) {
  if (text == text_) return;
  text_ = text;
  invalidateRowsFilter();
}

void TrialsFilterProxy::setWinnersOnly(bool on) {
  if (on == winnersOnly_) return;
  winnersOnly_ = on;
  invalidateRowsFilter();
}

void TrialsFilterProxy::setOnlyTrials(bool on, const QSet<qint64>& ids) {
  if (on == onlyTrials_ && (!on || ids == trialIds_)) return;
  onlyTrials_ = on;
  trialIds_ = on ? ids : QSet<qint64>();
  invalidateRowsFilter();
}

bool TrialsFilterProxy::filterAcceptsRow(int sourceRow, const QModelIndex&) const {
  const Trial& t = trials_->trial(sourceRow);
  if (onlyTrials_ && !trialIds_.contains(t.id)) return false;
  if (winnersOnly_ && trials_->winnerRow(t.problem_key) != sourceRow) return false;
  if (statuses_.isEmpty() ? t.status == TrialStatus::Pruned : !statuses_.contains(t.status)) return false;
  if (!shape_.isEmpty() && qstr(t.problem_key) != shape_) return false;
  if (!pass_.isEmpty() && TrialsModel::passOf(t.problem_key) != pass_) return false;
  if (text_.isEmpty()) return true;
  return trials_->configText(t.config).contains(text_, Qt::CaseInsensitive) ||
         qstr(t.problem_key).contains(text_, Qt::CaseInsensitive) || qstr(t.error).contains(text_, Qt::CaseInsensitive);
}

bool TrialsFilterProxy::lessThan(const QModelIndex& left, const QModelIndex& right) const {
  return trials_->compare(left.row(), right.row(), left.column()) < 0;
}

}  // namespace ktune::gui
