#pragma once
// ExportButton: a chart's "Export" button, whose menu asks for a file of one format (PNG, SVG,
// CSV…) in the folder last exported to, proposes the chart's name, and hands the file to the
// chart's own writer; a writer's InputError is said in a warning. The Analyse page's ChartFrame
// and the Landscape page's charts export through it.
#include <QToolButton>
#include <functional>

class QHBoxLayout;

namespace ktune::gui {

class ExportButton : public QToolButton {
  Q_OBJECT
 public:
  // `name`: the file stem the save dialog proposes; `save` writes a file by its suffix and throws
  // InputError when it cannot; `owner` parents the dialogs.
  ExportButton(std::function<QString()> name, std::function<void(const QString& file)> save, QWidget* owner);

  // A menu entry `text` that saves a .`suffix` file.
  void addFormat(const QString& suffix, const QString& text);

 private:
  std::function<QString()> name_;
  std::function<void(const QString&)> save_;
  QWidget* owner_;
};

// The row above a chart: its options (may be null) on the left, `button` on the right.
QHBoxLayout* exportBar(QWidget* options, ExportButton* button);

}  // namespace ktune::gui
