#pragma once
// Landscape page: the four live charts (latency in order with best so far, latency against a
// parameter, heatmap over two parameters, throughput against peak), their choices, and export.
// The two scatter charts plot latency or any metric the run recorded (the "y" combo box).
#include <QWidget>

#include "ktune/device.h"
#include "ktune/search_space.h"

class QCheckBox;
class QComboBox;
class QSettings;

namespace ktune::gui {

class TrialsModel;
class LatencyOrderChart;
class ParameterChart;
class ThroughputChart;
class HeatmapView;

class LandscapePage : public QWidget {
  Q_OBJECT
 public:
  explicit LandscapePage(TrialsModel* model, QWidget* parent = nullptr);

  void setDevice(const DeviceInfo& device);
  // The run's space: its candidate lists choose the default axes before trials arrive.
  void setSpace(const SearchSpace& space);
  LatencyOrderChart* orderChart() const { return order_; }
  ParameterChart* parameterChart() const { return parameter_; }
  HeatmapView* heatmap() const { return heatmap_; }
  // The scatter charts' y: "" for latency, else a name of TrialsModel::metricNames().
  void setYMetric(const QString& name);
  QString yMetric() const;
  QComboBox* yMetricCombo() const { return yMetric_; }
  ThroughputChart* throughputChart() const { return throughput_; }

  void saveSettings(QSettings& settings) const;
  void restoreSettings(const QSettings& settings);
  // Exports every chart as <stem>_<chart>.png and .svg into `folder`; returns the files.
  QStringList exportAll(const QString& folder, const QString& stem);

 public slots:
  void setHighlightedTrial(qint64 id);

 signals:
  void trialClicked(qint64 id);

 private:
  void refreshChoices();
  void refreshMetrics();
  QStringList rankedParameters() const;
  void applyShape();
  QWidget* framed(QWidget* chart, const QString& name, QWidget* options);

  TrialsModel* model_;
  LatencyOrderChart* order_;
  ParameterChart* parameter_;
  HeatmapView* heatmap_;
  ThroughputChart* throughput_;
  QComboBox* shape_;
  QCheckBox* log_;
  QComboBox* xParam_;
  QComboBox* heatShape_;  // the heatmap's one shape; follows the page's shape when one is chosen
  QComboBox* heatX_;
  QComboBox* heatY_;
  QComboBox* metric_;
  QComboBox* yMetric_;
  QString preferredY_;                                      // saved y metric, chosen again when a run has it
  QStringList preferred_{QString(), QString(), QString()};  // saved x, heat x, heat y
  bool choicesInformed_ = false;
  SearchSpace space_;  // the current choices were made with trials in the model
};

}  // namespace ktune::gui
