#include "ktune/widgets/space_editor.h"

#include <QBrush>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QTableView>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QtConcurrent>

#include "ktune/error.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/values_delegate.h"

namespace ktune::gui {

namespace {

const QColor kInvalidBackground(255, 205, 210);

// "32, 64,128" -> {32, 64, 128}; "true, false" -> booleans; ".cg, .ca" -> strings ("" for the
// empty one). Throws InputError naming the bad item.
std::vector<ParamValue> parseValues(const QString& text) {
  std::vector<ParamValue> values;
  for (const QString& item : text.split(QRegularExpression(QStringLiteral("[,\\s]+")), Qt::SkipEmptyParts)) {
    const ParamValue v = ParamValue::parse(sstr(item));
    if (v.is_string())
      if (const std::string why = string_value_problem(v.as_string()); !why.empty()) throw InputError(why);
    if (!values.empty() && v.kind() != values.front().kind())
      throw InputError("\"" + sstr(item) + "\" is not " + (values.front().is_int() ? "an " : "a ") +
                       to_string(values.front().kind()) +
                       " like the values before it; a parameter's values are of one kind");
    values.push_back(v);
  }
  if (values.empty()) throw InputError("no candidate values; list them like 32, 64, 128");
  return values;
}

QString joinValues(const std::vector<ParamValue>& values) {
  QStringList parts;
  for (const ParamValue& v : values) parts << qstr(v.text());
  return parts.join(QStringLiteral(", "));
}

}  // namespace

// ---- ParametersModel ----

int ParametersModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}
int ParametersModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant ParametersModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case NameColumn:
      return tr("Parameter");
    case ValuesColumn:
      return tr("Candidate values");
    case DescriptionColumn:
      return tr("Description");
  }
  return {};
}

Qt::ItemFlags ParametersModel::flags(const QModelIndex& index) const {
  return QAbstractTableModel::flags(index) | Qt::ItemIsEditable;
}

QString ParametersModel::rowError(int row) const {
  const Row& r = rows_[row];
  if (r.name.trimmed().isEmpty()) return tr("Give the parameter a name.");
  for (int i = 0; i < rows_.size(); ++i)
    if (i != row && rows_[i].name.trimmed() == r.name.trimmed()) return tr("Parameter names must be unique.");
  try {
    parseValues(r.values);
  } catch (const InputError& e) {
    return QString::fromUtf8(e.what());
  }
  return {};
}

bool ParametersModel::hasErrors() const {
  for (int i = 0; i < rows_.size(); ++i)
    if (!rowError(i).isEmpty()) return true;
  return false;
}

QVariant ParametersModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const Row& r = rows_[index.row()];
  if (role == Qt::DisplayRole || role == Qt::EditRole) {
    switch (index.column()) {
      case NameColumn:
        return r.name;
      case ValuesColumn:
        return r.values;
      case DescriptionColumn:
        return r.description;
    }
  }
  if (index.column() == ValuesColumn && (role == ValuesDelegate::KindRole || role == ValuesDelegate::ValuesRole)) {
    try {
      const std::vector<ParamValue> values = parseValues(r.values);
      if (role == ValuesDelegate::KindRole) return QString::fromUtf8(to_string(values.front().kind()));
      QStringList texts;
      for (const ParamValue& v : values) texts << qstr(v.text());
      return texts;
    } catch (const InputError&) {
      return {};  // edited as text until it parses
    }
  }
  if (index.column() == DescriptionColumn) return {};
  const QString error = rowError(index.row());
  const bool nameProblem = error == tr("Give the parameter a name.") || error == tr("Parameter names must be unique.");
  const bool marked = !error.isEmpty() && (index.column() == NameColumn) == nameProblem;
  if (role == Qt::BackgroundRole && marked) return QBrush(kInvalidBackground);
  if (role == Qt::ToolTipRole && marked) return error;
  if (role == Qt::ToolTipRole && index.column() == ValuesColumn) {
    try {
      return tr("%n candidate(s)", nullptr, static_cast<int>(parseValues(r.values).size()));
    } catch (const InputError& e) {
      return QString::fromUtf8(e.what());
    }
  }
  return {};
}

bool ParametersModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!index.isValid() || role != Qt::EditRole) return false;
  Row& r = rows_[index.row()];
  const QString text = value.toString();
  switch (index.column()) {
    case NameColumn:
      r.name = text.trimmed();
      break;
    case ValuesColumn:
      r.values = text;
      break;
    case DescriptionColumn:
      r.description = text;
      break;
  }
  // A name change can make or break another row's uniqueness: refresh the whole table.
  emit dataChanged(this->index(0, 0), this->index(rowCount() - 1, ColumnCount - 1));
  return true;
}

bool ParametersModel::insertRows(int row, int count, const QModelIndex& parent) {
  if (parent.isValid() || row < 0 || row > rows_.size()) return false;
  beginInsertRows(parent, row, row + count - 1);
  for (int i = 0; i < count; ++i) rows_.insert(row, Row{});
  endInsertRows();
  return true;
}

bool ParametersModel::removeRows(int row, int count, const QModelIndex& parent) {
  if (parent.isValid() || row < 0 || row + count > rows_.size()) return false;
  beginRemoveRows(parent, row, row + count - 1);
  rows_.remove(row, count);
  endRemoveRows();
  return true;
}

void ParametersModel::setParameters(const std::vector<Parameter>& params) {
  beginResetModel();
  rows_.clear();
  for (const Parameter& p : params) rows_.append(Row{qstr(p.name), joinValues(p.values), qstr(p.description)});
  endResetModel();
}

std::vector<Parameter> ParametersModel::parameters() const {
  std::vector<Parameter> params;
  for (int i = 0; i < rows_.size(); ++i) {
    const QString error = rowError(i);
    if (!error.isEmpty())
      throw InputError("parameter row " + std::to_string(i + 1) + " (" + sstr(rows_[i].name) + "): " + sstr(error));
    params.push_back(Parameter{sstr(rows_[i].name), parseValues(rows_[i].values), sstr(rows_[i].description)});
  }
  return params;
}

// ---- ConstraintsModel ----

int ConstraintsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}
int ConstraintsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant ConstraintsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  return section == ExprColumn ? tr("Constraint (must be non-zero)") : tr("Description");
}

Qt::ItemFlags ConstraintsModel::flags(const QModelIndex& index) const {
  return QAbstractTableModel::flags(index) | Qt::ItemIsEditable;
}

QVariant ConstraintsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const Row& r = rows_[index.row()];
  if (role == Qt::DisplayRole || role == Qt::EditRole) return index.column() == ExprColumn ? r.expr : r.description;
  if (index.column() != ExprColumn || !issues_.contains(index.row())) return {};
  if (role == Qt::BackgroundRole) return QBrush(kInvalidBackground);
  if (role == Qt::ToolTipRole) return issues_.value(index.row());
  return {};
}

bool ConstraintsModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!index.isValid() || role != Qt::EditRole) return false;
  Row& r = rows_[index.row()];
  (index.column() == ExprColumn ? r.expr : r.description) = value.toString();
  emit dataChanged(index, index);
  return true;
}

bool ConstraintsModel::insertRows(int row, int count, const QModelIndex& parent) {
  if (parent.isValid() || row < 0 || row > rows_.size()) return false;
  beginInsertRows(parent, row, row + count - 1);
  for (int i = 0; i < count; ++i) rows_.insert(row, Row{});
  endInsertRows();
  issues_.clear();
  return true;
}

bool ConstraintsModel::removeRows(int row, int count, const QModelIndex& parent) {
  if (parent.isValid() || row < 0 || row + count > rows_.size()) return false;
  beginRemoveRows(parent, row, row + count - 1);
  rows_.remove(row, count);
  endRemoveRows();
  issues_.clear();
  return true;
}

void ConstraintsModel::setConstraints(const std::vector<Constraint>& constraints) {
  beginResetModel();
  rows_.clear();
  issues_.clear();
  for (const Constraint& c : constraints) rows_.append(Row{qstr(c.expr), qstr(c.description)});
  endResetModel();
}

std::vector<Constraint> ConstraintsModel::constraints() const {
  std::vector<Constraint> out;
  for (const Row& r : rows_)
    if (!r.expr.trimmed().isEmpty()) out.push_back(Constraint{sstr(r.expr.trimmed()), sstr(r.description)});
  return out;
}

int ConstraintsModel::constraintIndex(int row) const {
  if (rows_[row].expr.trimmed().isEmpty()) return -1;
  int index = 0;
  for (int i = 0; i < row; ++i)
    if (!rows_[i].expr.trimmed().isEmpty()) ++index;
  return index;
}

void ConstraintsModel::setIssues(const std::vector<ConstraintIssue>& issues) {
  QMap<int, QString> byRow;
  for (int row = 0; row < rows_.size(); ++row) {
    const int index = constraintIndex(row);
    for (const ConstraintIssue& issue : issues)
      if (index >= 0 && issue.index == static_cast<std::size_t>(index)) byRow.insert(row, qstr(issue.message));
  }
  if (byRow == issues_) return;
  issues_ = byRow;
  if (!rows_.isEmpty()) emit dataChanged(index(0, ExprColumn), index(rowCount() - 1, ExprColumn));
}

// ---- SpaceEditor ----

SpaceEditor::SpaceEditor(QWidget* parent) : QWidget(parent) {
  paramsView_ = new QTableView(this);
  paramsView_->setModel(&params_);
  paramsView_->setItemDelegateForColumn(ParametersModel::ValuesColumn, new ValuesDelegate(paramsView_));
  configsView_ = new QTableWidget(this);
  configsView_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  configsView_->horizontalHeader()->setStretchLastSection(true);
  configsView_->setToolTip(
      tr("This space is an explicit list of configs (\"configs\" in the space file): edit the file to change "
         "them; the constraints below still prune them."));
  configsView_->hide();
  constraintsView_ = new QTableView(this);
  constraintsView_->setModel(&constraints_);
  for (QTableView* view : {paramsView_, constraintsView_}) {
    view->horizontalHeader()->setStretchLastSection(true);
    view->verticalHeader()->setDefaultSectionSize(24);
    view->setEditTriggers(QAbstractItemView::AllEditTriggers);
    view->setSelectionBehavior(QAbstractItemView::SelectRows);
  }
  paramsView_->setColumnWidth(ParametersModel::NameColumn, 110);
  paramsView_->setColumnWidth(ParametersModel::ValuesColumn, 220);
  constraintsView_->setColumnWidth(ConstraintsModel::ExprColumn, 300);

  countsLabel_ = new QLabel(this);
  countsLabel_->setTextFormat(Qt::RichText);
  countsLabel_->setWordWrap(true);

  const auto rowButtons = [this](QAbstractItemModel* model, QTableView* view, const QString& what) {
    auto* add = new QPushButton(QIcon(QStringLiteral(":/icons/add.svg")), tr("Add %1").arg(what), this);
    auto* remove = new QPushButton(QIcon(QStringLiteral(":/icons/remove.svg")), tr("Remove"), this);
    connect(add, &QPushButton::clicked, this, [model, view] {
      model->insertRows(model->rowCount(), 1);
      view->edit(model->index(model->rowCount() - 1, 0));
    });
    connect(remove, &QPushButton::clicked, this, [model, view] {
      const QModelIndexList rows = view->selectionModel()->selectedRows();
      for (auto it = rows.rbegin(); it != rows.rend(); ++it) model->removeRows(it->row(), 1);
      if (rows.isEmpty() && view->currentIndex().isValid()) model->removeRows(view->currentIndex().row(), 1);
    });
    auto* row = new QHBoxLayout;
    row->addWidget(add);
    row->addWidget(remove);
    row->addStretch();
    return row;
  };

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  paramsBox_ = new QWidget(this);
  auto* paramsLayout = new QVBoxLayout(paramsBox_);
  paramsLayout->setContentsMargins(0, 0, 0, 0);
  paramsLayout->addWidget(paramsView_);
  paramsLayout->addLayout(rowButtons(&params_, paramsView_, tr("parameter")));
  layout->addWidget(paramsBox_, 3);
  layout->addWidget(configsView_, 3);
  layout->addWidget(constraintsView_, 2);
  layout->addLayout(rowButtons(&constraints_, constraintsView_, tr("constraint")));
  layout->addWidget(countsLabel_);

  debounce_.setSingleShot(true);
  debounce_.setInterval(150);
  connect(&debounce_, &QTimer::timeout, this, &SpaceEditor::recount);
  for (QAbstractItemModel* model :
       {static_cast<QAbstractItemModel*>(&params_), static_cast<QAbstractItemModel*>(&constraints_)}) {
    connect(model, &QAbstractItemModel::dataChanged, this, &SpaceEditor::scheduleRecount);
    connect(model, &QAbstractItemModel::rowsInserted, this, &SpaceEditor::scheduleRecount);
    connect(model, &QAbstractItemModel::rowsRemoved, this, &SpaceEditor::scheduleRecount);
    connect(model, &QAbstractItemModel::modelReset, this, &SpaceEditor::scheduleRecount);
  }
  connect(&watcher_, &QFutureWatcher<SpaceCounts>::finished, this, [this] {
    counts_ = watcher_.result();
    countsLabel_->setText(countsText());
    countsLabel_->setToolTip(counts_.detail);
    emit countsUpdated();
  });
}

void SpaceEditor::scheduleRecount() {
  // The constraints' in-place marks follow the model's own edits, so only the count waits.
  debounce_.start();
  emit spaceEdited();
}

void SpaceEditor::setSpace(const SearchSpace& space) {
  listParams_ = space.is_list() ? space.parameters() : std::vector<Parameter>{};
  listConfigs_ = space.configs();
  configsView_->clear();
  configsView_->setColumnCount(static_cast<int>(listParams_.size()));
  configsView_->setRowCount(static_cast<int>(listConfigs_.size()));
  QStringList header;
  for (const Parameter& p : listParams_) header << qstr(p.name);
  configsView_->setHorizontalHeaderLabels(header);
  for (int row = 0; row < configsView_->rowCount(); ++row)
    for (int col = 0; col < configsView_->columnCount(); ++col)
      configsView_->setItem(row, col,
                            new QTableWidgetItem(qstr(listConfigs_[row].value(listParams_[col].name).text())));
  configsView_->setVisible(space.is_list());
  paramsBox_->setVisible(!space.is_list());
  params_.setParameters(space.is_list() ? std::vector<Parameter>{} : space.parameters());
  constraints_.setConstraints(space.constraints());
}

SearchSpace SpaceEditor::editedSpace() const {
  if (isList()) return SearchSpace(listParams_, listConfigs_, constraints_.constraints());
  return SearchSpace(params_.parameters(), constraints_.constraints());
}

SearchSpace SpaceEditor::space() const {
  SearchSpace space = editedSpace();
  if (!contexts_.empty()) {
    const auto issues = space.check(contexts_.front());
    if (!issues.empty())
      throw InputError("constraint " + std::to_string(issues.front().index + 1) + ": " + issues.front().message);
  }
  return space;
}

void SpaceEditor::setContexts(std::vector<Variables> contexts) {
  contexts_ = std::move(contexts);
  scheduleRecount();
}

QString SpaceEditor::countsText() const {
  const QLocale locale;
  QString text = tr("<b>%1</b> configs").arg(locale.toString(static_cast<qulonglong>(counts_.total)));
  if (counts_.valid)
    text += tr(" → <b>%1</b> valid after constraints").arg(locale.toString(static_cast<qulonglong>(*counts_.valid)));
  if (contexts_.size() > 1) text += tr(" (summed over %1 shapes)").arg(contexts_.size());
  if (!counts_.valid && !counts_.detail.isEmpty())
    text += QStringLiteral(" — <span style='color:#c62828'>%1</span>").arg(counts_.detail.toHtmlEscaped());
  return text;
}

void SpaceEditor::recount() {
  SearchSpace space;
  try {
    space = editedSpace();
  } catch (const InputError& e) {
    watcher_.setFuture(QtFuture::makeReadyFuture(
        SpaceCounts{0, std::nullopt, tr("Fix the marked parameter: %1").arg(QString::fromUtf8(e.what()))}));
    return;
  }
  const std::uint64_t total = space.total_size();
  if (contexts_.empty()) {
    constraints_.setIssues({});
    watcher_.setFuture(
        QtFuture::makeReadyFuture(SpaceCounts{total, std::nullopt, tr("Add a shape to count the valid configs.")}));
    return;
  }
  const auto issues = space.check(contexts_.front());
  constraints_.setIssues(issues);
  if (!issues.empty()) {
    watcher_.setFuture(QtFuture::makeReadyFuture(
        SpaceCounts{total, std::nullopt, tr("Fix the marked constraint: %1").arg(qstr(issues.front().message))}));
    return;
  }
  if (total > kMaxCountedConfigs) {
    watcher_.setFuture(QtFuture::makeReadyFuture(SpaceCounts{
        total, std::nullopt,
        tr("Too large to count live (over %1 configs); narrow the candidate lists.").arg(kMaxCountedConfigs)}));
    return;
  }
  // Counting enumerates the space for every shape: off the UI thread.
  watcher_.setFuture(QtConcurrent::run([space = std::move(space), contexts = contexts_, total]() {
    SpaceCounts counts{total, 0, {}};
    std::map<std::string, std::uint64_t> prunedBy;
    QStringList perProblem;
    for (const Variables& context : contexts) {
      try {
        const PruneReport report = space.prune_report(context);
        *counts.valid += report.valid;
        perProblem << QString::number(report.valid);
        for (const auto& [expr, n] : report.pruned_by) prunedBy[expr] += n;
      } catch (const InputError& e) {
        return SpaceCounts{total, std::nullopt, QString::fromUtf8(e.what())};
      }
    }
    QStringList lines{QObject::tr("Valid per shape: %1").arg(perProblem.join(QStringLiteral(", ")))};
    for (const auto& [expr, n] : prunedBy) lines << QObject::tr("pruned by %1: %2").arg(qstr(expr)).arg(n);
    counts.detail = lines.join(QLatin1Char('\n'));
    return counts;
  }));
}

}  // namespace ktune::gui
