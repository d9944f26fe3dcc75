#include "ktune/widgets/importance_model.h"

#include <QColor>
#include <algorithm>
#include <numeric>

#include "ktune/csv.h"
#include "ktune/widgets/qt_types.h"

namespace ktune::gui {

namespace {

QString percent(double fraction) { return QStringLiteral("%1 %").arg(fraction * 100, 0, 'f', fraction < 0.1 ? 1 : 0); }

QString signedNumber(double v) { return (v >= 0 ? QStringLiteral("+") : QString()) + QString::number(v, 'f', 2); }

const char* statusName(ImportanceReport::Status s) {
  switch (s) {
    case ImportanceReport::Status::Ok:
      return "ok";
    case ImportanceReport::Status::NotEnoughTrials:
      return "not_enough_trials";
    case ImportanceReport::Status::NoVariation:
      return "no_variation";
  }
  return "";
}

std::string number(double v) { return sstr(QString::number(v, 'g', 6)); }

}  // namespace

ImportanceModel::ImportanceModel(QObject* parent) : QAbstractTableModel(parent) {}

int ImportanceModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(order_.size());
}

int ImportanceModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

void ImportanceModel::setReport(ImportanceReport report) {
  beginResetModel();
  report_ = std::move(report);
  order_.resize(report_.parameters.size());
  std::iota(order_.begin(), order_.end(), 0);
  // Most important first; fixed parameters (nothing to say) last, in the space's order.
  std::stable_sort(order_.begin(), order_.end(), [this](std::size_t a, std::size_t b) {
    const ParameterImportance &pa = report_.parameters[a], &pb = report_.parameters[b];
    if (pa.fixed() != pb.fixed()) return pb.fixed();
    return pa.importance > pb.importance;
  });
  endResetModel();
}

QStringList ImportanceModel::rankedNames() const {
  QStringList out;
  for (std::size_t i : order_) out << qstr(report_.parameters[i].name);
  return out;
}

QVariant ImportanceModel::display(const ParameterImportance& p, int column) const {
  const bool ok = report_.status == ImportanceReport::Status::Ok;
  const bool correlated = report_.status != ImportanceReport::Status::NotEnoughTrials;
  switch (column) {
    case ParameterColumn:
      return qstr(p.name);
    case ImportanceColumn:
      if (p.fixed()) return tr("fixed");
      return ok ? percent(p.importance) : QStringLiteral("—");
    case CorrelationColumn:
      if (p.fixed()) return QString();
      if (!correlated) return QStringLiteral("—");
      return p.ordered ? QStringLiteral("ρ %1").arg(signedNumber(p.correlation))
                       : QStringLiteral("η %1").arg(p.correlation, 0, 'f', 2);
    case ValuesColumn:
      return static_cast<qulonglong>(p.values);
    default:
      return {};
  }
}

QString ImportanceModel::toolTip(const ParameterImportance& p, int column) const {
  if (p.fixed())
    return tr("%1 took one value among the %2 ok trials, so it cannot have mattered here: widen it to learn whether "
              "it does")
        .arg(qstr(p.name))
        .arg(report_.trials);
  switch (column) {
    case ImportanceColumn:
      if (report_.status != ImportanceReport::Status::Ok) return qstr(report_.message());
      return tr("%1 of what the parameters explain alone. On its own, %2 explains %3 ± %4 of the variance of log "
                "latency (fANOVA main effect; ± over the forest's trees)")
          .arg(percent(p.importance), qstr(p.name), percent(p.variance), percent(p.variance_std));
    case CorrelationColumn:
      if (report_.status == ImportanceReport::Status::NotEnoughTrials) return qstr(report_.message());
      if (!p.ordered)
        return tr("η = %1: how much latency differs between %2's values (0: not at all, 1: its values alone tell "
                  "the time). Its values are strings, which have no order, so η has no sign")
            .arg(p.correlation, 0, 'f', 2)
            .arg(qstr(p.name));
      return tr("Spearman's ρ = %1 between %2 and latency: %3")
          .arg(signedNumber(p.correlation), qstr(p.name),
               std::abs(p.correlation) < 0.1 ? tr("no steady direction (it may still matter, in a non-monotone way)")
               : p.correlation > 0           ? tr("larger values are slower")
                                             : tr("larger values are faster"));
    case ValuesColumn:
      return tr("Distinct values of %1 among the shape's ok trials").arg(qstr(p.name));
    default:
      return {};
  }
}

QVariant ImportanceModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount) return {};
  const ParameterImportance& p = parameter(index.row());
  const int column = index.column();
  switch (role) {
    case Qt::DisplayRole:
      return display(p, column);
    case Qt::ToolTipRole:
      return toolTip(p, column);
    case Qt::TextAlignmentRole:
      return column == ParameterColumn ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                                       : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::ForegroundRole:
      return p.fixed() ? QVariant(QColor(0x75, 0x75, 0x75)) : QVariant();
    case BarRole:
      if (column == ImportanceColumn) return p.importance;
      if (column == CorrelationColumn) return p.correlation;
      return {};
    case BarKindRole: {
      BarKind kind = BarKind::None;
      if (!p.fixed() && column == ImportanceColumn && report_.status == ImportanceReport::Status::Ok)
        kind = BarKind::Share;
      else if (!p.fixed() && column == CorrelationColumn && report_.status != ImportanceReport::Status::NotEnoughTrials)
        kind = p.ordered ? BarKind::Signed : BarKind::Unsigned;
      return static_cast<int>(kind);
    }
    default:
      return {};
  }
}

QVariant ImportanceModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount) return {};
  if (role == Qt::DisplayRole) {
    static const char* const names[] = {QT_TR_NOOP("Parameter"), QT_TR_NOOP("Importance"), QT_TR_NOOP("Correlation"),
                                        QT_TR_NOOP("Values")};
    return tr(names[section]);
  }
  if (role == Qt::ToolTipRole) {
    switch (section) {
      case ImportanceColumn:
        return tr(
            "fANOVA, as Optuna's default: each parameter's share of what the parameters explain alone of the "
            "variance of log latency, learnt by a random forest from the shape's ok trials");
      case CorrelationColumn:
        return tr(
            "Correlation with latency, which way it goes: Spearman's ρ for numbers and booleans (+: larger is slower, "
            "−: larger is "
            "faster), η for strings (no order, so no sign)");
      default:
        return {};
    }
  }
  return {};
}

std::string ImportanceModel::csv(const std::string& run, const std::string& shape) const {
  std::string out =
      csv::format_record({"run", "shape", "parameter", "importance", "variance_alone", "variance_alone_std",
                          "correlation", "correlation_kind", "values", "fixed", "status"});
  for (std::size_t i : order_) {
    const ParameterImportance& p = report_.parameters[i];
    out += csv::format_record({run, shape, p.name, number(p.importance), number(p.variance), number(p.variance_std),
                               number(p.correlation),
                               p.fixed()   ? ""
                               : p.ordered ? "spearman_rho"
                                           : "eta",
                               std::to_string(p.values), p.fixed() ? "true" : "false", statusName(report_.status)});
  }
  return out;
}

}  // namespace ktune::gui
