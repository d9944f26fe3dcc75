#pragma once
// ConfigDiffPanel: the panel beside an Apply-page table that shows the current row's two configs
// in full, a parameter a row (ConfigDiffModel) under a title that names the row: a table cell cuts
// a config of ten parameters. The registry diff and the comparison of two runs both use it, each
// with its own title sentences.
#include <QWidget>
#include <vector>

#include "ktune/widgets/config_diff_model.h"

class QLabel;

namespace ktune::gui {

class ConfigDiffPanel : public QWidget {
  Q_OBJECT
 public:
  // `viewName`: the table's object name, by which tests and style sheets find it.
  explicit ConfigDiffPanel(const QString& viewName, QWidget* parent = nullptr);

  ConfigDiffModel* model() { return &model_; }
  const ConfigDiffModel* model() const { return &model_; }
  // No row: an empty table and `prompt` in the title.
  void clear(const QString& prompt);
  // A row's parameters; returns how many differ, for the title the caller sets next.
  int setChanges(std::vector<ParameterChange> changes);
  // `note` (plain text, e.g. a verdict's clock note) goes below the title in full, in the colour
  // of numbers that do not compare, where it is read without hovering.
  void setTitle(const QString& html, const QString& toolTip, const QString& note = {});
  QString titleText() const;

 private:
  ConfigDiffModel model_;
  QLabel* title_;
};

}  // namespace ktune::gui
