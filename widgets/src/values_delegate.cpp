#include "ktune/widgets/values_delegate.h"

#include <QApplication>
#include <QCheckBox>
#include <QFrame>
#include <QHBoxLayout>
#include <QListWidget>
#include <QPainter>
#include <QPushButton>
#include <QVBoxLayout>

namespace ktune::gui {

namespace {

const QString kBooleanEditor = QStringLiteral("booleanValues");
const QString kStringEditor = QStringLiteral("stringValues");

QStringList booleans() { return {QStringLiteral("true"), QStringLiteral("false")}; }

QWidget* booleanEditor(QWidget* parent) {
  auto* frame = new QFrame(parent);
  frame->setObjectName(kBooleanEditor);
  frame->setAutoFillBackground(true);
  auto* row = new QHBoxLayout(frame);
  row->setContentsMargins(4, 0, 4, 0);
  for (const QString& b : booleans()) {
    auto* box = new QCheckBox(b, frame);
    box->setObjectName(b);
    box->setToolTip(QObject::tr("Try %1 as a candidate").arg(b));
    row->addWidget(box);
  }
  row->addStretch();
  return frame;
}

QWidget* stringEditor(QWidget* parent) {
  auto* frame = new QFrame(parent);
  frame->setObjectName(kStringEditor);
  frame->setFrameShape(QFrame::StyledPanel);
  frame->setAutoFillBackground(true);
  auto* list = new QListWidget(frame);
  list->setToolTip(QObject::tr("One candidate string per line; double-click to edit. Write the empty string as \"\"."));
  auto* add = new QPushButton(QIcon(QStringLiteral(":/icons/add.svg")), QObject::tr("Add"), frame);
  auto* remove = new QPushButton(QIcon(QStringLiteral(":/icons/remove.svg")), QObject::tr("Remove"), frame);
  QObject::connect(add, &QPushButton::clicked, list, [list] {
    auto* item = new QListWidgetItem(QString(), list);
    item->setFlags(item->flags() | Qt::ItemIsEditable);
    list->setCurrentItem(item);
    list->editItem(item);
  });
  QObject::connect(remove, &QPushButton::clicked, list, [list] { delete list->currentItem(); });
  auto* buttons = new QVBoxLayout;
  buttons->addWidget(add);
  buttons->addWidget(remove);
  buttons->addStretch();
  auto* layout = new QHBoxLayout(frame);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addWidget(list, 1);
  layout->addLayout(buttons);
  return frame;
}

}  // namespace

QWidget* ValuesDelegate::createEditor(QWidget* parent, const QStyleOptionViewItem& option,
                                      const QModelIndex& index) const {
  const QString kind = index.data(KindRole).toString();
  if (kind == QStringLiteral("boolean")) return booleanEditor(parent);
  if (kind == QStringLiteral("string")) return stringEditor(parent);
  return QStyledItemDelegate::createEditor(parent, option, index);
}

void ValuesDelegate::setEditorData(QWidget* editor, const QModelIndex& index) const {
  const QStringList values = index.data(ValuesRole).toStringList();
  if (editor->objectName() == kBooleanEditor) {
    for (const QString& b : booleans()) editor->findChild<QCheckBox*>(b)->setChecked(values.contains(b));
  } else if (editor->objectName() == kStringEditor) {
    auto* list = editor->findChild<QListWidget*>();
    list->clear();
    for (const QString& v : values) list->addItem(v);
    for (int i = 0; i < list->count(); ++i) list->item(i)->setFlags(list->item(i)->flags() | Qt::ItemIsEditable);
  } else {
    QStyledItemDelegate::setEditorData(editor, index);
  }
}

void ValuesDelegate::setModelData(QWidget* editor, QAbstractItemModel* model, const QModelIndex& index) const {
  QStringList values;
  if (editor->objectName() == kBooleanEditor) {
    // Unticking both leaves no candidates, which the model marks in place like any empty list.
    for (const QString& b : booleans())
      if (editor->findChild<QCheckBox*>(b)->isChecked()) values << b;
  } else if (editor->objectName() == kStringEditor) {
    const auto* list = editor->findChild<QListWidget*>();
    for (int i = 0; i < list->count(); ++i)
      if (const QString v = list->item(i)->text().trimmed(); !v.isEmpty())
        values << v;  // blank items were never filled in
  } else {
    QStyledItemDelegate::setModelData(editor, model, index);
    return;
  }
  model->setData(index, values.join(QStringLiteral(", ")), Qt::EditRole);
}

void ValuesDelegate::paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const {
  if (index.data(KindRole).toString() != QStringLiteral("boolean")) {
    QStyledItemDelegate::paint(painter, option, index);
    return;
  }
  // The checkboxes the editor shows, drawn in the cell, so the choice reads the same unedited.
  QStyleOptionViewItem cell = option;
  initStyleOption(&cell, index);
  cell.text.clear();
  QStyle* style = option.widget ? option.widget->style() : QApplication::style();
  style->drawControl(QStyle::CE_ItemViewItem, &cell, painter, option.widget);
  const QStringList values = index.data(ValuesRole).toStringList();
  int x = option.rect.x() + 4;
  for (const QString& b : booleans()) {
    QStyleOptionButton box;
    box.text = b;
    box.state = QStyle::State_Enabled | (values.contains(b) ? QStyle::State_On : QStyle::State_Off);
    const int width =
        style->sizeFromContents(QStyle::CT_CheckBox, &box, option.fontMetrics.size(0, b), option.widget).width();
    box.rect = QRect(x, option.rect.y(), width, option.rect.height());
    style->drawControl(QStyle::CE_CheckBox, &box, painter, option.widget);
    x += width + 8;
  }
}

void ValuesDelegate::updateEditorGeometry(QWidget* editor, const QStyleOptionViewItem& option,
                                          const QModelIndex& index) const {
  QStyledItemDelegate::updateEditorGeometry(editor, option, index);
  // A list of strings does not fit a row: the editor drops below the cell, over the rows after it.
  if (editor->objectName() == kStringEditor)
    editor->setGeometry(option.rect.x(), option.rect.y(), option.rect.width(), 130);
}

}  // namespace ktune::gui
