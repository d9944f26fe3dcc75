#include "ktune/widgets/key_labels.h"

#include <QComboBox>
#include <QCoreApplication>

#include "ktune/widgets/qt_types.h"

namespace ktune::gui {

namespace {

// A key's fields, "name=value" separated by commas (Problem::key); a value never holds a comma.
QStringList fieldsOf(const QString& key) { return key.split(QLatin1Char(','), Qt::SkipEmptyParts); }

QString joined(const QStringList& fields) { return fields.join(QStringLiteral(", ")); }

}  // namespace

KeyLabels::KeyLabels(const QStringList& keys) {
  if (keys.size() < 2) {
    for (const QString& key : keys) labels_.insert(key, key);
    return;
  }
  // A field is shared when every key holds it, name and value alike; the first key's order
  // names them.
  QList<QStringList> split;
  for (const QString& key : keys) split.append(fieldsOf(key));
  QStringList shared;
  for (const QString& field : split.front()) {
    bool everywhere = true;
    for (const QStringList& fields : split) everywhere = everywhere && fields.contains(field);
    if (everywhere) shared.append(field);
  }
  common_ = joined(shared);
  for (qsizetype i = 0; i < keys.size(); ++i) {
    QStringList own;
    for (const QString& field : split[i])
      if (!shared.contains(field)) own.append(field);
    // A key whose every field the others share (N=512 beside N=512,tp=2/out) keeps its whole
    // text: an empty label would say nothing.
    labels_.insert(keys[i], own.isEmpty() ? keys[i] : joined(own));
  }
}

KeyLabels::KeyLabels(const std::vector<std::string>& keys)
    : KeyLabels([&keys] {
        QStringList list;
        for (const std::string& key : keys) list.append(qstr(key));
        return list;
      }()) {}

QString KeyLabels::label(const QString& key) const { return labels_.value(key, key); }

QString KeyLabels::label(const std::string& key) const { return label(qstr(key)); }

QString KeyLabels::toolTip(const QString& key) const {
  if (common_.isEmpty()) return key;
  return QCoreApplication::translate("KeyLabels", "%1\n(every shape listed has %2)").arg(key, common_);
}

QString KeyLabels::toolTip(const std::string& key) const { return toolTip(qstr(key)); }

void addKeyItems(QComboBox* box, const QStringList& keys, const KeyLabels& labels) {
  for (const QString& key : keys) {
    box->addItem(labels.label(key), key);
    box->setItemData(box->count() - 1, labels.toolTip(key), Qt::ToolTipRole);
  }
  box->setToolTip(labels.common().isEmpty()
                      ? QString()
                      : QCoreApplication::translate("KeyLabels", "Every shape has %1").arg(labels.common()));
}

}  // namespace ktune::gui
