#pragma once
// Paints ImportanceModel's numbers as bars beside their text, as Weights & Biases' importance
// panel reads: importance a blue share from the left; an ordered parameter's correlation from
// the middle, orange to the right where larger values are slower, green to the left where they
// are faster; a string parameter's η (no sign) grey from the left.
#include <QStyledItemDelegate>

namespace ktune::gui {

class ImportanceBarDelegate : public QStyledItemDelegate {
  Q_OBJECT
 public:
  using QStyledItemDelegate::QStyledItemDelegate;
  void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override;
  QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override;

  static QColor slowerColour() { return QColor(0xe6, 0x51, 0x00); }
  static QColor fasterColour() { return QColor(0x2e, 0x7d, 0x32); }
};

}  // namespace ktune::gui
