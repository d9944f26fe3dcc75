#pragma once
// Heatmap over two parameters for one shape: each cell is the lowest search median among that
// shape's ok trials with those two values (the best over every other parameter; a minimum over
// different shapes would mean nothing). The crown goes to the shape's winner as the core decided
// it, and its cell shows the number it was chosen by, not the search's: until the shape's result
// is known the lowest cell is marked as the search's best. A cell without an ok trial says why
// (every trial slow_abort: "≥ t", a lower bound; failed; pruned; not measured), so no value of a
// parameter drops out. Values of any kind (integers, strings, booleans) are rows and columns; all
// times are in one unit chosen from the data. Hover shows a cell's trial; clicking selects it.
// Under the Analyse page's brush (TrialsModel::brush()) the cells holding a brushed trial are
// drawn as they are and the others washed out.
// The title names the shape by what tells it apart from the run's others; an exported picture
// names it whole, with the run; the cells export as CSV.
// Qt Charts has no heatmap series, so this paints its own grid.
#include <QElapsedTimer>
#include <QTimer>
#include <QWidget>
#include <array>
#include <vector>

#include "ktune/trial.h"
#include "ktune/widgets/chart_axes.h"

class QPainter;

namespace ktune::gui {

class TrialsModel;

class HeatmapView : public QWidget {
  Q_OBJECT
 public:
  explicit HeatmapView(TrialsModel* model, QWidget* parent = nullptr);

  void setParameters(const QString& x, const QString& y);
  QString xParameter() const { return xName_; }
  QString yParameter() const { return yName_; }
  // Empty: the first shape in key order. The title names the shape shown.
  void setShapeFilter(const QString& problemKey);
  QString shape() const;
  void setHighlightedTrial(qint64 id);
  // PNG or SVG by the suffix, titled exportTitle(); a .csv name writes csv(). Throws InputError
  // naming the file.
  void exportTo(const QString& file);
  QString exportTitle() const { return titleText(true); }
  // One row per cell: its two values, the number it shows (in timeUnit()), what it shows (the
  // number, "≥ t", failed, pruned, not measured), its best ok trial, whether it is crowned, and
  // its trials' count per status.
  std::string csv() const;
  void refresh();

  // Cell contents, for tests: best ok trial id at (x value, y value), or -1; the text painted in
  // the cell (a time in timeUnit(), or why it is empty); the values on each axis.
  qint64 bestTrialAt(const ParamValue& x, const ParamValue& y) const;
  QString cellText(const ParamValue& x, const ParamValue& y) const;
  const std::vector<ParamValue>& xValues() const { return xs_; }
  const std::vector<ParamValue>& yValues() const { return ys_; }
  const TimeUnit& timeUnit() const { return unit_; }
  // The crowned trial (the winner's search trial, or the search's best before the result is
  // known), or -1; the caption saying which, with its number.
  qint64 crownedTrial() const { return crownId_; }
  bool crownIsWinner() const { return crownIsWinner_; }
  QString crownText() const { return crownText_; }
  // Under a brush: the cells holding a brushed trial (drawn as they are) and the others (dimmed).
  // Both 0 without a brush.
  struct BrushCounts {
    int highlighted = 0, dimmed = 0;
  };
  BrushCounts brushCounts() const;
  QSize sizeHint() const override { return {480, 360}; }

 signals:
  void trialClicked(qint64 id);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void showEvent(QShowEvent* event) override;

 private:
  struct Cell {
    double best_ns = 0;  // what it shows: the winner's number in the crowned cell
    int row = -1;        // model row of the best ok trial
    double slow_ns = 0;  // the lowest slow_abort time: a lower bound when nothing is ok
    int slowRow = -1;
    std::array<int, std::size(kAllTrialStatuses)> counts{};
  };
  const Cell* cellOf(const ParamValue& x, const ParamValue& y) const;
  QString textOf(const Cell& c) const;    // what the cell shows
  QString reasonOf(const Cell& c) const;  // why it has no ok trial, with the counts
  QString timeText(double ns) const;      // in unit_, without the unit
  // The title: the shape by its label, or (`whole`, for exports) its whole key and the run.
  QString titleText(bool whole) const;
  void rebuild();
  void placeCrown(const std::string& key, const std::string& xn, const std::string& yn);
  std::size_t cellIndex(const Trial& t, const std::string& xn, const std::string& yn) const;
  std::vector<bool> brushedMask() const;   // by cell: holds a brushed trial
  QString cellName(const Trial& t) const;  // "BM=64, threads=4"
  void collectCells(const std::string& key, const std::string& xn, const std::string& yn);
  void paintCrown(QPainter& p, const QRectF& cell) const;
  void paintEmpty(QPainter& p, const QRectF& r, const Cell& c) const;
  void markDirty();
  QRectF gridRect() const;
  bool cellAt(const QPointF& pos, int* cx, int* cy) const;
  QColor colourFor(double ns) const;

  TrialsModel* model_;
  QString xName_, yName_, shape_;
  std::vector<ParamValue> xs_, ys_;
  std::vector<Cell> cells_;  // ys_.size() rows of xs_.size()
  double min_ns_ = 0, max_ns_ = 0;
  TimeUnit unit_{QStringLiteral("µs"), 1e3};
  qint64 highlighted_ = -1;
  qint64 crownId_ = -1;
  int crownCell_ = -1;  // in cells_
  bool crownIsWinner_ = false;
  bool crownFlagged_ = false;
  QString crownText_;
  bool dirty_ = true;
  bool exporting_ = false;
  QTimer rebuildTimer_;
  QElapsedTimer sinceRebuild_;
};

}  // namespace ktune::gui
