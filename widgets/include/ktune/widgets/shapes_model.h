#pragma once
// The problem shapes of a session as an editable table: one row per Problem, one column per
// key field of the family. Shapes come in as --shape text ("M=1,16,64 N=4096 K=4096"), whose
// lists expand into rows, with tp-size and split dim turning global shapes into local ones.
#include <QAbstractTableModel>
#include <vector>

#include "ktune/kernel_family.h"
#include "ktune/problem.h"

namespace ktune::gui {

class ShapesModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  using QAbstractTableModel::QAbstractTableModel;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role) override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  bool removeRows(int row, int count, const QModelIndex& parent = {}) override;

  // Changing the family drops shapes that do not belong to it.
  void setFamily(const KernelFamily& family);
  const KernelFamily& family() const { return family_; }
  void setProblems(std::vector<Problem> problems);
  const std::vector<Problem>& problems() const { return problems_; }

  // Expands each non-empty line of `text` as one --shape and appends the new problems
  // (duplicates skipped). Throws InputError naming the line; nothing is added then.
  int addShapes(const QString& text, int tpSize, TpSplitDim split);

 signals:
  void problemsChanged();
  // An edit was refused; the message says what to type instead.
  void editRejected(const QString& message);

 private:
  KernelFamily family_;
  std::vector<Problem> problems_;
};

}  // namespace ktune::gui
