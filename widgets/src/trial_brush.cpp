#include "ktune/widgets/trial_brush.h"

namespace ktune::gui {

void TrialBrush::set(const QList<qint64>& ids, const QString& problemKey) {
  if (active_ && ids == ids_ && problemKey == shape_) return;
  active_ = true;
  ids_ = ids;
  set_ = QSet<qint64>(ids.begin(), ids.end());
  shape_ = problemKey;
  emit changed();
}

void TrialBrush::clear() {
  if (!active_) return;
  active_ = false;
  ids_.clear();
  set_.clear();
  shape_.clear();
  emit changed();
}

}  // namespace ktune::gui
