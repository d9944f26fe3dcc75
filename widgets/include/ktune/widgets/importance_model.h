#pragma once
// ImportanceModel: a shape's parameter importance (ktune/parameter_importance.h) as a table, most
// important first, fixed parameters last: each parameter's share of what the parameters explain
// alone, and beside it (as Weights & Biases shows it) its correlation with latency, which says
// which way it goes. BarRole and BarKindRole tell ImportanceBarDelegate what to draw.
#include <QAbstractTableModel>
#include <string>
#include <vector>

#include "ktune/parameter_importance.h"

namespace ktune::gui {

class ImportanceModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { ParameterColumn, ImportanceColumn, CorrelationColumn, ValuesColumn, ColumnCount };
  enum Role { BarRole = Qt::UserRole + 1, BarKindRole };
  // How a bar reads: a share from the left (0..1), a signed value from the middle (-1..1), or an
  // unsigned one from the left (0..1) that has no direction; None: no bar.
  enum class BarKind { None, Share, Signed, Unsigned };

  explicit ImportanceModel(QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  void setReport(ImportanceReport report);
  const ImportanceReport& report() const { return report_; }
  // The parameter of a row, and the parameters in the table's order (most important first).
  const ParameterImportance& parameter(int row) const {
    return report_.parameters[order_[static_cast<std::size_t>(row)]];
  }
  QStringList rankedNames() const;
  // Every number of the table, one parameter a line; `run` and `shape` name what it is of.
  std::string csv(const std::string& run, const std::string& shape) const;

 private:
  QVariant display(const ParameterImportance& p, int column) const;
  QString toolTip(const ParameterImportance& p, int column) const;

  ImportanceReport report_;
  std::vector<std::size_t> order_;  // rows in report_.parameters
};

}  // namespace ktune::gui
