#include "ktune/widgets/importance_delegate.h"

#include <QApplication>
#include <QPainter>
#include <algorithm>

#include "ktune/widgets/importance_model.h"

namespace ktune::gui {

namespace {
constexpr int kTextWidth = 64;  // "ρ +0.82", "100 %"
constexpr int kMinBar = 70;
}  // namespace

void ImportanceBarDelegate::paint(QPainter* painter, const QStyleOptionViewItem& option,
                                  const QModelIndex& index) const {
  const auto kind = static_cast<ImportanceModel::BarKind>(index.data(ImportanceModel::BarKindRole).toInt());
  if (kind == ImportanceModel::BarKind::None) {
    QStyledItemDelegate::paint(painter, option, index);
    return;
  }
  QStyleOptionViewItem opt = option;
  initStyleOption(&opt, index);
  const QString text = opt.text;
  opt.text.clear();
  const QStyle* style = opt.widget ? opt.widget->style() : QApplication::style();
  style->drawControl(QStyle::CE_ItemViewItem, &opt, painter, opt.widget);

  const double v = std::clamp(index.data(ImportanceModel::BarRole).toDouble(), -1.0, 1.0);
  const QRect cell = opt.rect.adjusted(4, 4, -4, -4);
  const QRect track(cell.left(), cell.top(), std::max(10, cell.width() - kTextWidth), cell.height());
  QRectF bar;
  QColor colour;
  painter->save();
  painter->setRenderHint(QPainter::Antialiasing);
  painter->fillRect(track, QColor(0xee, 0xee, 0xee));
  switch (kind) {
    case ImportanceModel::BarKind::Share:
      bar = QRectF(track.left(), track.top(), track.width() * std::max(0.0, v), track.height());
      colour = QColor(0x15, 0x65, 0xc0);
      break;
    case ImportanceModel::BarKind::Unsigned:
      bar = QRectF(track.left(), track.top(), track.width() * std::abs(v), track.height());
      colour = QColor(0x75, 0x75, 0x75);
      break;
    case ImportanceModel::BarKind::Signed: {
      const double mid = track.left() + track.width() / 2.0, half = track.width() / 2.0;
      bar = v >= 0 ? QRectF(mid, track.top(), half * v, track.height())
                   : QRectF(mid + half * v, track.top(), -half * v, track.height());
      colour = v >= 0 ? slowerColour() : fasterColour();
      painter->setPen(QPen(QColor(0x9e, 0x9e, 0x9e), 1));
      painter->drawLine(QPointF(mid, track.top() - 2), QPointF(mid, track.bottom() + 2));
      break;
    }
    case ImportanceModel::BarKind::None:
      break;
  }
  painter->fillRect(bar, colour);
  painter->setPen(opt.palette.color(QPalette::Text));
  painter->drawText(QRect(track.right() + 4, cell.top(), kTextWidth - 4, cell.height()),
                    Qt::AlignVCenter | Qt::AlignRight, text);
  painter->restore();
}

QSize ImportanceBarDelegate::sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const {
  const QSize s = QStyledItemDelegate::sizeHint(option, index);
  return {std::max(s.width(), kTextWidth + kMinBar), s.height()};
}

}  // namespace ktune::gui
