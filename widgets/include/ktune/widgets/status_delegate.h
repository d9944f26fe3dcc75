#pragma once
// Paints the Status column as a coloured chip, in the same colours the charts use.
#include <QStyledItemDelegate>

namespace ktune::gui {

class StatusDelegate : public QStyledItemDelegate {
  Q_OBJECT
 public:
  using QStyledItemDelegate::QStyledItemDelegate;
  void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override;
};

}  // namespace ktune::gui
