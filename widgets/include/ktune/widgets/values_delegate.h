#pragma once
// Edits a parameter's candidate values by kind: a boolean parameter as two checkboxes (true,
// false), a string parameter as a list of strings (one per item, added and removed with buttons),
// an integer one (or a new row) as text like "32, 64, 128".
#include <QStyledItemDelegate>

namespace ktune::gui {

class ValuesDelegate : public QStyledItemDelegate {
  Q_OBJECT
 public:
  // The roles the model answers for the values cell: the row's kind ("integer", "boolean",
  // "string"; empty while the text does not parse) and its values as written (QStringList).
  enum Role { KindRole = Qt::UserRole + 1, ValuesRole };
  using QStyledItemDelegate::QStyledItemDelegate;

  QWidget* createEditor(QWidget* parent, const QStyleOptionViewItem& option, const QModelIndex& index) const override;
  void setEditorData(QWidget* editor, const QModelIndex& index) const override;
  void setModelData(QWidget* editor, QAbstractItemModel* model, const QModelIndex& index) const override;
  void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override;
  void updateEditorGeometry(QWidget* editor, const QStyleOptionViewItem& option,
                            const QModelIndex& index) const override;
};

}  // namespace ktune::gui
