#include "ktune/widgets/trials_model.h"

#include <algorithm>
#include <set>

#include "ktune/problem.h"
#include "ktune/widgets/qt_types.h"

namespace ktune::gui {

TrialsModel::TrialsModel(QObject* parent) : QAbstractTableModel(parent), brush_(new TrialBrush(this)) {}

QString TrialsModel::parameterText(const std::string&, const ParamValue& value) const { return qstr(value.text()); }

QString TrialsModel::configText(const Config& config) const { return qstr(config.key()); }

QString TrialsModel::describe(const Trial& trial) const { return describeTrial(trial, configText(trial.config)); }

QString TrialsModel::passOf(const std::string& problemKey) {
  // Key fields are "name=value" separated by commas; a value never holds one.
  for (std::size_t begin = 0; begin <= problemKey.size();) {
    const std::size_t end = std::min(problemKey.find(',', begin), problemKey.size());
    if (problemKey.compare(begin, 5, "pass=") == 0 && end - begin >= 5)
      return qstr(problemKey.substr(begin + 5, end - begin - 5));
    begin = end + 1;
  }
  return {};
}

QStringList TrialsModel::passes() const {
  QStringList out;
  for (const QString& key : problemKeys_) {
    const QString pass = passOf(sstr(key));
    if (!pass.isEmpty() && !out.contains(pass)) out.append(pass);
  }
  static const QStringList unsloth = {QStringLiteral("fwd"), QStringLiteral("dX"), QStringLiteral("dW")};
  const auto rank = [](const QString& p) {
    const auto i = unsloth.indexOf(p);
    return i < 0 ? unsloth.size() : i;
  };
  std::stable_sort(out.begin(), out.end(),
                   [&](const QString& a, const QString& b) { return rank(a) != rank(b) ? rank(a) < rank(b) : a < b; });
  return out;
}

int TrialsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(trials_.size());
}

int TrialsModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : FirstParamColumn + static_cast<int>(parameters_.size()) + TailCount;
}

int TrialsModel::parameterColumn(const QString& name) const {
  const int i = static_cast<int>(parameters_.indexOf(name));
  return i < 0 ? -1 : FirstParamColumn + i;
}

QVariant TrialsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  if (role == Qt::ToolTipRole && section == ShapeColumn && !keyLabels_.common().isEmpty())
    return tr("What tells the shapes apart; every shape has %1").arg(keyLabels_.common());
  if (role != Qt::DisplayRole) return {};
  if (section == IdColumn) return tr("#");
  if (section == ShapeColumn) return tr("Shape");
  if (section == PassColumn) return tr("Pass");
  if (section == StatusColumn) return tr("Status");
  const int p = section - FirstParamColumn;
  if (p < parameters_.size()) return parameters_[p];
  switch (tailColumn(section)) {
    case Median:
      return tr("Median");
    case Mean:
      return tr("Mean");
    case Std:
      return tr("Std");
    case Min:
      return tr("Min");
    case Samples:
      return tr("Samples");
    case Tflops:
      return tr("TFLOP/s");
    case Gbps:
      return tr("GB/s");
    case Compile:
      return tr("Compile s");
    case Error:
      return tr("Error");
  }
  return {};
}

QVariant TrialsModel::sortValue(int row, int column) const {
  const Trial& t = trial(row);
  if (column == IdColumn) return static_cast<qlonglong>(t.id);
  if (column == ShapeColumn) return qstr(t.problem_key);
  if (column == PassColumn) return passOf(t.problem_key);
  if (column == StatusColumn) return static_cast<int>(t.status);
  const int p = column - FirstParamColumn;
  if (p < parameters_.size()) {
    const auto name = sstr(parameters_[p]);
    if (!t.config.has(name)) return QVariant();
    const ParamValue& v = t.config.value(name);
    return v.is_int() ? QVariant(static_cast<qlonglong>(v.as_int())) : QVariant(qstr(v.text()));
  }
  // Trials without samples sort after every measured one.
  const auto latency = [&](double v) { return t.stats.count ? QVariant(v) : QVariant(); };
  switch (tailColumn(column)) {
    case Median:
      return latency(t.stats.median_ns);
    case Mean:
      return latency(t.stats.mean_ns);
    case Std:
      return latency(t.stats.std_ns);
    case Min:
      return latency(t.stats.min_ns);
    case Samples:
      return static_cast<qulonglong>(t.stats.count);
    case Tflops:
      return t.tflops;
    case Gbps:
      return t.gbps;
    case Compile:
      return t.compile_time_s;
    case Error:
      return qstr(t.error);
  }
  return {};
}

int TrialsModel::compare(int rowA, int rowB, int column) const {
  const Trial& a = trial(rowA);
  const Trial& b = trial(rowB);
  const auto cmp = [](auto x, auto y) { return x < y ? -1 : (y < x ? 1 : 0); };
  // Trials without a value (no samples, parameter absent) sort after every valued one.
  const auto missingLast = [&](bool hasA, bool hasB, auto x, auto y) {
    if (hasA != hasB) return hasA ? -1 : 1;
    return hasA ? cmp(x, y) : 0;
  };
  if (column == IdColumn) return cmp(a.id, b.id);
  if (column == ShapeColumn) return compare_keys(a.problem_key, b.problem_key);
  if (column == PassColumn) return QString::compare(passOf(a.problem_key), passOf(b.problem_key));
  if (column == StatusColumn) return cmp(static_cast<int>(a.status), static_cast<int>(b.status));
  const int p = column - FirstParamColumn;
  if (p < parameters_.size()) {
    const std::string name = sstr(parameters_[p]);
    const ParamValue none;
    return missingLast(a.config.has(name), b.config.has(name), a.config.has(name) ? a.config.value(name) : none,
                       b.config.has(name) ? b.config.value(name) : none);
  }
  const bool ma = a.stats.count > 0, mb = b.stats.count > 0;
  switch (tailColumn(column)) {
    case Median:
      return missingLast(ma, mb, a.stats.median_ns, b.stats.median_ns);
    case Mean:
      return missingLast(ma, mb, a.stats.mean_ns, b.stats.mean_ns);
    case Std:
      return missingLast(ma, mb, a.stats.std_ns, b.stats.std_ns);
    case Min:
      return missingLast(ma, mb, a.stats.min_ns, b.stats.min_ns);
    case Samples:
      return cmp(a.stats.count, b.stats.count);
    case Tflops:
      return cmp(a.tflops, b.tflops);
    case Gbps:
      return cmp(a.gbps, b.gbps);
    case Compile:
      return cmp(a.compile_time_s, b.compile_time_s);
    case Error:
      return a.error.compare(b.error);
  }
  return 0;
}

QVariant TrialsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const Trial& t = trial(index.row());
  switch (role) {
    case TrialIdRole:
      return static_cast<qlonglong>(t.id);
    case StatusRole:
      return static_cast<int>(t.status);
    case ProblemKeyRole:
      return qstr(t.problem_key);
    case SortRole:
      return sortValue(index.row(), index.column());
    case WinnerRole:
      return winnerRowSet_.contains(index.row());
    case Qt::ToolTipRole:
      return winnerRowSet_.contains(index.row()) ? describeWinnerRow(t) : describe(t);
    case Qt::FontRole:
      return winnerRowSet_.contains(index.row()) ? QVariant(winnerFont()) : QVariant();
    case Qt::DecorationRole:
      return index.column() == IdColumn && winnerRowSet_.contains(index.row()) ? QVariant(winner(t.problem_key)->icon())
                                                                               : QVariant();
    case Qt::TextAlignmentRole:
      return index.column() == ShapeColumn || index.column() == PassColumn || index.column() == StatusColumn ||
                     tailColumn(index.column()) == Error
                 ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                 : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::DisplayRole:
      break;
    default:
      return {};
  }
  const int column = index.column();
  if (column == StatusColumn) return statusLabel(t.status);
  if (column == ShapeColumn) return keyLabels_.label(t.problem_key);
  const int tail = tailColumn(column);
  if (tail >= 0 && t.stats.count == 0 && tail <= Samples) return {};
  switch (tail) {
    case Median:
      return formatNs(t.stats.median_ns);
    case Mean:
      return formatNs(t.stats.mean_ns);
    case Std:
      return formatNs(t.stats.std_ns);
    case Min:
      return formatNs(t.stats.min_ns);
    case Tflops:
      return t.tflops > 0 ? QVariant(QString::number(t.tflops, 'f', 3)) : QVariant();
    case Gbps:
      return t.gbps > 0 ? QVariant(QString::number(t.gbps, 'f', 1)) : QVariant();
    case Compile:
      return t.compile_time_s > 0 ? QVariant(QString::number(t.compile_time_s, 'f', 3)) : QVariant();
    case Error:
      return qstr(t.error).section(QLatin1Char('\n'), 0, 0);
    default:
      break;
  }
  const int p = column - FirstParamColumn;
  if (p >= 0 && p < parameters_.size()) {
    const std::string name = sstr(parameters_[p]);
    return t.config.has(name) ? QVariant(parameterText(name, t.config.value(name))) : QVariant();
  }
  return sortValue(index.row(), column);
}

void TrialsModel::noteProblemKey(const std::string& key) {
  const QString k = qstr(key);
  if (problemKeys_.contains(k)) return;
  // Kept in key order (M=64 before M=256) for every shape picker and legend.
  const auto at = std::upper_bound(problemKeys_.begin(), problemKeys_.end(), key,
                                   [](const std::string& a, const QString& b) { return compare_keys(a, sstr(b)) < 0; });
  problemKeys_.insert(at, k);
  // A new shape can change what tells the others apart: their Shape cells are relabelled.
  keyLabels_ = KeyLabels(problemKeys_);
  if (rowCount() > 0) emit dataChanged(index(0, ShapeColumn), index(rowCount() - 1, ShapeColumn), {Qt::DisplayRole});
  emit problemKeysChanged();
}

void TrialsModel::addParameters(const Trial& t) {
  for (const auto& [name, value] : t.config.values()) {
    const QString n = qstr(name);
    if (parameters_.contains(n)) continue;
    const int column = FirstParamColumn + static_cast<int>(parameters_.size());
    beginInsertColumns({}, column, column);
    parameters_.append(n);
    endInsertColumns();
  }
}

bool TrialsModel::noteMetrics(const Trial& t) {
  bool added = false;
  for (const auto& kv : t.metrics) {
    const QString name = qstr(kv.first);
    const auto at = std::lower_bound(metricNames_.begin(), metricNames_.end(), name);
    if (at != metricNames_.end() && *at == name) continue;
    metricNames_.insert(at, name);
    added = true;
  }
  return added;
}

void TrialsModel::reset(const QStringList& parameters) {
  winners_.clear();
  setTrials(parameters, {});
  setPruning({}, {});
  emit winnersChanged();
}

void TrialsModel::setPruning(SearchSpace space, std::vector<ProblemPruning> pruning) {
  space_ = std::move(space);
  pruning_ = std::move(pruning);
  prunedListed_ = 0;
  nextPrunedId_ = kFirstPrunedId;
  emit pruningChanged();
}

void TrialsModel::addPruning(ProblemPruning pruning) {
  pruning_.push_back(std::move(pruning));
  emit pruningChanged();
}

std::uint64_t TrialsModel::prunedCount() const {
  std::uint64_t n = 0;
  for (const ProblemPruning& p : pruning_) n += p.report.total - p.report.valid;
  if (pruning_.empty())  // a run that predates the record lists its pruned configs in trials.csv
    for (const Trial& t : trials_) n += t.status == TrialStatus::Pruned;
  return n;
}

std::uint64_t TrialsModel::plannedCount() const {
  std::uint64_t n = 0;
  for (const ProblemPruning& p : pruning_) n += p.planned;
  return n;
}

void TrialsModel::listPruned() {
  QList<Trial> rows;
  for (; prunedListed_ < pruning_.size(); ++prunedListed_)
    for (Trial& t : pruned_trials(space_, pruning_[prunedListed_])) {
      t.id = nextPrunedId_--;
      rows.append(std::move(t));
    }
  appendTrials(rows);
}

void TrialsModel::setTrials(const QStringList& parameters, std::vector<Trial> trials) {
  beginResetModel();
  parameters_ = parameters;
  trials_ = std::move(trials);
  rowById_.clear();
  rowById_.reserve(static_cast<qsizetype>(trials_.size()));
  problemKeys_.clear();
  metricNames_.clear();
  // Compare std::strings against what was seen: converting 100k keys to QString costs more
  // than the rest of the load.
  std::set<std::string, KeyLess> keys;
  std::set<std::string> params;
  for (const QString& p : parameters_) params.insert(sstr(p));
  for (std::size_t i = 0; i < trials_.size(); ++i) {
    const Trial& t = trials_[i];
    rowById_.insert(t.id, static_cast<int>(i));
    keys.insert(t.problem_key);
    for (const auto& kv : t.config.values())
      if (params.insert(kv.first).second) parameters_.append(qstr(kv.first));
    if (!t.metrics.empty()) noteMetrics(t);
  }
  for (const std::string& k : keys) problemKeys_.append(qstr(k));
  keyLabels_ = KeyLabels(problemKeys_);
  winnerRows_.clear();
  winnerRowSet_.clear();
  endResetModel();
  // After the reset: views that follow the brush (the trials table's proxy) must not filter
  // while it is under way.
  brush_->clear();
  locateWinners(0);
  emit problemKeysChanged();
  emit metricNamesChanged();
}

void TrialsModel::appendTrials(const QList<Trial>& batch) {
  if (batch.isEmpty()) return;
  for (const Trial& t : batch) addParameters(t);
  const int first = rowCount();
  beginInsertRows({}, first, first + static_cast<int>(batch.size()) - 1);
  // No exact reserve here: it would defeat the vector's geometric growth and copy every trial
  // on each batch.
  for (const Trial& t : batch) {
    rowById_.insert(t.id, static_cast<int>(trials_.size()));
    trials_.push_back(t);
  }
  endInsertRows();
  // A result ahead of its trials (a batch still on its way): its row is here now.
  if (locateWinners(first)) emit winnersChanged();
  bool newMetrics = false;
  for (const Trial& t : batch) {
    noteProblemKey(t.problem_key);
    if (!t.metrics.empty()) newMetrics = noteMetrics(t) || newMetrics;
  }
  if (newMetrics) emit metricNamesChanged();
}

void TrialsModel::setWinners(const std::vector<Winner>& winners) {
  while (!winners_.empty()) forgetWinner(winners_.begin()->first);
  for (const Winner& w : winners) winners_.insert_or_assign(w.problemKey, w);
  locateWinners(0);
  emit winnersChanged();
}

void TrialsModel::addResult(const ProblemResult& result) {
  if (!result.best) return;  // no config passed: no winner
  Winner w = Winner::of(result);
  forgetWinner(w.problemKey);
  const std::string key = w.problemKey;
  winners_.emplace(key, std::move(w));
  locateWinners(0);
  emit winnersChanged();
}

void TrialsModel::forgetWinner(const std::string& problemKey) {
  winners_.erase(problemKey);
  const auto row = winnerRows_.find(problemKey);
  if (row == winnerRows_.end()) return;
  winnerRowSet_.remove(row->second);
  announceRow(row->second);
  winnerRows_.erase(row);
}

const Winner* TrialsModel::winner(const std::string& problemKey) const {
  const auto it = winners_.find(problemKey);
  return it == winners_.end() ? nullptr : &it->second;
}

int TrialsModel::winnerRow(const std::string& problemKey) const {
  const auto it = winnerRows_.find(problemKey);
  return it == winnerRows_.end() ? -1 : it->second;
}

bool TrialsModel::locateWinners(int fromRow) {
  bool found = false;
  for (const auto& [key, w] : winners_) {
    if (winnerRows_.count(key)) continue;
    const auto isWinner = [&](int row) {
      const Trial& t = trial(row);
      return t.status == TrialStatus::Ok && t.problem_key == key && t.config.same_values(w.config);
    };
    int row = rowForId(w.choice.trial_id);
    if (row < fromRow || !isWinner(row)) {
      row = -1;
      for (int r = fromRow; r < rowCount() && row < 0; ++r)
        if (isWinner(r)) row = r;
    }
    if (row < 0) continue;
    winnerRows_[key] = row;
    winnerRowSet_.insert(row);
    announceRow(row);
    found = true;
  }
  return found;
}

void TrialsModel::announceRow(int row) {
  emit dataChanged(index(row, 0), index(row, columnCount() - 1),
                   {WinnerRole, Qt::ToolTipRole, Qt::FontRole, Qt::DecorationRole});
}

QString TrialsModel::describeWinnerRow(const Trial& trial) const {
  return winner(trial.problem_key)->describe() + tr("\n\nThis row is its search trial, with the search's numbers:\n") +
         describe(trial);
}

QFont TrialsModel::winnerFont() {
  QFont f;
  f.setBold(true);
  return f;
}

}  // namespace ktune::gui
