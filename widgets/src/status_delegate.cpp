#include "ktune/widgets/status_delegate.h"

#include <QPainter>

#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/trials_model.h"

namespace ktune::gui {

void StatusDelegate::paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const {
  const QVariant status = index.data(TrialsModel::StatusRole);
  if (!status.isValid()) {
    QStyledItemDelegate::paint(painter, option, index);
    return;
  }
  QStyleOptionViewItem opt = option;
  initStyleOption(&opt, index);
  const QString text = opt.text;
  opt.text.clear();
  opt.widget->style()->drawControl(QStyle::CE_ItemViewItem, &opt, painter, opt.widget);

  const QColor colour = statusColor(static_cast<TrialStatus>(status.toInt()));
  painter->save();
  painter->setRenderHint(QPainter::Antialiasing);
  const QRect r = opt.rect.adjusted(3, 3, -3, -3);
  QColor fill = colour;
  fill.setAlpha(40);
  painter->setPen(QPen(colour, 1));
  painter->setBrush(fill);
  painter->drawRoundedRect(r, 4, 4);
  painter->setPen(colour.darker(120));
  painter->drawText(r.adjusted(6, 0, -4, 0), Qt::AlignVCenter | Qt::AlignLeft, text);
  painter->restore();
}

}  // namespace ktune::gui
