#include "ktune/widgets/shapes_model.h"

#include <algorithm>

#include "ktune/error.h"
#include "ktune/widgets/qt_types.h"

namespace ktune::gui {

int ShapesModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(problems_.size());
}

int ShapesModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(family_.key_fields.size()) + 1;
}

QVariant ShapesModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Vertical) return section + 1;
  if (section < static_cast<int>(family_.key_fields.size())) return qstr(family_.key_fields[section].name);
  return tr("Sharding");
}

Qt::ItemFlags ShapesModel::flags(const QModelIndex& index) const {
  auto f = QAbstractTableModel::flags(index);
  if (index.column() < static_cast<int>(family_.key_fields.size())) f |= Qt::ItemIsEditable;
  return f;
}

QVariant ShapesModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const Problem& p = problems_[index.row()];
  const int fields = static_cast<int>(family_.key_fields.size());
  if (role == Qt::ToolTipRole) return qstr(p.key());
  if (role != Qt::DisplayRole && role != Qt::EditRole) return {};
  if (index.column() < fields) {
    const auto& name = family_.key_fields[index.column()].name;
    for (const auto& [k, v] : p.fields)
      if (k == name) return qstr(v);
    return {};
  }
  if (p.tp_size <= 1) return tr("none");
  return QStringLiteral("tp=%1 / %2").arg(p.tp_size).arg(qstr(to_string(p.tp_split_dim)));
}

bool ShapesModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!index.isValid() || role != Qt::EditRole || index.column() >= static_cast<int>(family_.key_fields.size()))
    return false;
  const KeyField& field = family_.key_fields[index.column()];
  const QString text = value.toString().trimmed();
  if (field.numeric) {
    bool ok = false;
    const qlonglong v = text.toLongLong(&ok);
    if (!ok || v <= 0) {
      emit editRejected(tr("%1 must be a positive integer, not \"%2\".").arg(qstr(field.name), text));
      return false;
    }
  } else if (!field.choices.empty() &&
             std::find(field.choices.begin(), field.choices.end(), sstr(text)) == field.choices.end()) {
    QStringList choices;
    for (const auto& c : field.choices) choices << qstr(c);
    emit editRejected(tr("%1 must be one of %2.").arg(qstr(field.name), choices.join(QStringLiteral(", "))));
    return false;
  }
  problems_[index.row()].set(field.name, sstr(text));
  emit dataChanged(index, index);
  emit problemsChanged();
  return true;
}

bool ShapesModel::removeRows(int row, int count, const QModelIndex& parent) {
  if (parent.isValid() || row < 0 || row + count > rowCount()) return false;
  beginRemoveRows(parent, row, row + count - 1);
  problems_.erase(problems_.begin() + row, problems_.begin() + row + count);
  endRemoveRows();
  emit problemsChanged();
  return true;
}

void ShapesModel::setFamily(const KernelFamily& family) {
  beginResetModel();
  const bool same = family.name == family_.name;
  family_ = family;
  if (!same) problems_.clear();
  endResetModel();
  emit problemsChanged();
}

void ShapesModel::setProblems(std::vector<Problem> problems) {
  beginResetModel();
  problems_ = std::move(problems);
  endResetModel();
  emit problemsChanged();
}

int ShapesModel::addShapes(const QString& text, int tpSize, TpSplitDim split) {
  std::vector<Problem> added;
  int lineNumber = 0;
  for (const QString& line : text.split(QLatin1Char('\n'))) {
    ++lineNumber;
    const QString spec = line.trimmed();
    if (spec.isEmpty() || spec.startsWith(QLatin1Char('#'))) continue;
    try {
      for (Problem& p : expand_shape(family_, sstr(spec), tpSize, split)) {
        const auto same = [&](const Problem& q) { return q.key() == p.key(); };
        if (std::none_of(problems_.begin(), problems_.end(), same) && std::none_of(added.begin(), added.end(), same))
          added.push_back(std::move(p));
      }
    } catch (const InputError& e) {
      throw InputError("shape line " + std::to_string(lineNumber) + " \"" + sstr(spec) + "\": " + e.what());
    }
  }
  if (added.empty()) return 0;
  const int first = rowCount();
  beginInsertRows({}, first, first + static_cast<int>(added.size()) - 1);
  for (Problem& p : added) problems_.push_back(std::move(p));
  endInsertRows();
  emit problemsChanged();
  return static_cast<int>(added.size());
}

}  // namespace ktune::gui
