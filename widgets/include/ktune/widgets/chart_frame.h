#pragma once
// ChartFrame: a chart on a page with a heading, its options, and an Export button whose menu
// saves the chart as PNG or SVG under a title that names the run and the shape (a picture that
// stands alone in a report), or the chart's data as CSV. The picture is the heading and the
// chart (options and button stay out); for the export the heading reads the full title, on
// screen the short one.
#include <QString>
#include <QWidget>
#include <functional>
#include <string>

class QLabel;
class QMenu;

namespace ktune::gui {

class ExportButton;

class ChartFrame : public QWidget {
  Q_OBJECT
 public:
  // `name`: the file stem the save dialog proposes ("parameter_importance").
  ChartFrame(const QString& name, QWidget* chart, QWidget* options = nullptr, QWidget* parent = nullptr);

  void setHeading(const QString& heading);  // on screen
  QString heading() const;
  // The exported picture's title (run and shape); without one, the heading.
  void setExportTitle(std::function<QString()> title) { title_ = std::move(title); }
  QString exportTitle() const;
  // The chart's data as CSV text, header first; without it the menu offers no CSV.
  void setCsv(std::function<std::string()> csv);
  bool hasCsv() const { return static_cast<bool>(csv_); }
  std::string csv() const { return csv_ ? csv_() : std::string(); }

  // PNG (or another raster format by the suffix), SVG, or CSV for a .csv name. Throws InputError
  // naming the file when it cannot be written, or when the chart has no CSV.
  void exportTo(const QString& file);
  QWidget* chart() const { return chart_; }
  QMenu* exportMenu() const;
  QString name() const { return objectName(); }

 private:
  QWidget* chart_;
  QWidget* picture_;
  QLabel* heading_;
  ExportButton* button_;
  std::function<QString()> title_;
  std::function<std::string()> csv_;
};

}  // namespace ktune::gui
