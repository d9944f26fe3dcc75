#pragma once
// ParallelCoordinates: the best N configs of one shape (its ok trials by search median), one
// line each across an axis per parameter and a last axis of median latency (fastest at the
// bottom), as Optuna's and Weights & Biases' parallel coordinates draw them. Lines are coloured
// by rank (best darkest); the shape's winner, when among them, is gold. Each parameter's axis
// follows its kind (chart_axes.h) over the values the lines take.
//
// Brushing: dragging along an axis keeps the lines that cross it within the dragged range (on a
// category axis, the categories inside it); brushes on several axes all have to hold; clicking
// an axis clears its brush. selectionChanged() carries the trials kept, for other views to
// show. Clicking a line says which trial it is (trialClicked), hovering it shows its config.
// Qt Charts has no parallel coordinates, so this paints its own.
#include <QMap>
#include <QWidget>
#include <string>
#include <vector>

#include "ktune/widgets/chart_axes.h"

namespace ktune::gui {

class TrialsModel;

class ParallelCoordinates : public QWidget {
  Q_OBJECT
 public:
  explicit ParallelCoordinates(const TrialsModel* model, QWidget* parent = nullptr);

  void setShape(const QString& problemKey);
  QString shape() const { return shape_; }
  // The parameter axes, left to right (the latency axis comes last).
  void setParameters(const QStringList& parameters);
  void setCount(int n);
  int count() const { return count_; }
  // Reads the model again (new trials, another winner); brushes on axes that remain stay.
  void refresh();

  QStringList axisNames() const;  // parameters, then the latency axis
  QList<qint64> shownTrials() const;
  // The trials the brushes keep, best first; every shown one when nothing is brushed.
  QList<qint64> selectedTrials() const;
  bool brushing() const { return !brushes_.isEmpty(); }
  // Keeps lines crossing axis `axis` within [from, to] (0: the axis's bottom, 1: its top).
  void setBrush(int axis, double from, double to);
  void clearBrush(int axis);
  void clearBrushes();
  // Where trial `id`'s line crosses axis `axis` (0..1 from the bottom); NaN when not shown.
  double positionOf(qint64 id, int axis) const;
  // The widget point of height `t` (0..1 from the bottom) on axis `axis`.
  QPoint pointOn(int axis, double t) const;
  // The shown configs best first: rank, trial, shape, each parameter, median, winner, kept by
  // the brushes.
  std::string csv(const std::string& run) const;
  QSize sizeHint() const override { return {640, 320}; }

 signals:
  // The trials the brushes keep; `brushing` false when no brush is set (every line is kept).
  void selectionChanged(const QList<qint64>& ids, bool brushing);
  void trialClicked(qint64 id);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void leaveEvent(QEvent* event) override;

 private:
  struct Axis {
    QString name;
    std::vector<AxisTick> ticks;  // at heights 0..1
  };
  struct Line {
    int row;                // in the model
    std::vector<double> t;  // per axis, 0..1 from the bottom
    bool winner = false;
    bool kept = true;
  };
  struct Range {
    double from, to;
  };

  void layoutAxes(const std::vector<int>& rows);
  void applyBrushes();  // sets each line's `kept`; emits when the kept set changed
  QRectF plotRect() const;
  double axisX(int axis) const;
  int axisNear(const QPointF& pos) const;  // -1 when none is within reach
  int lineNear(const QPointF& pos) const;  // index in lines_, or -1
  double heightAt(const QPointF& pos) const;
  QColor lineColour(std::size_t rank) const;
  void paintLines(QPainter& p) const;
  void paintAxes(QPainter& p) const;

  const TrialsModel* model_;
  QString shape_;
  QStringList parameters_;
  int count_ = 20;
  std::vector<Axis> axes_;
  std::vector<Line> lines_;       // best first
  QMap<QString, Range> brushes_;  // by axis name, so a brush outlives a refresh
  QList<qint64> lastKept_;
  bool lastBrushing_ = false;
  int dragAxis_ = -1;
  double dragFrom_ = 0;
  QPoint pressAt_;
  int hovered_ = -1;
};

}  // namespace ktune::gui
