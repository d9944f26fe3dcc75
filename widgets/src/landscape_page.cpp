#include "ktune/widgets/landscape_page.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFrame>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSettings>
#include <QVBoxLayout>
#include <algorithm>
#include <set>

#include "ktune/error.h"
#include "ktune/widgets/export_button.h"
#include "ktune/widgets/heatmap_view.h"
#include "ktune/widgets/key_labels.h"
#include "ktune/widgets/order_chart.h"
#include "ktune/widgets/parameter_chart.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/throughput_chart.h"
#include "ktune/widgets/trial_brush.h"
#include "ktune/widgets/trials_model.h"

namespace ktune::gui {

LandscapePage::LandscapePage(TrialsModel* model, QWidget* parent) : QWidget(parent), model_(model) {
  order_ = new LatencyOrderChart(model_);
  parameter_ = new ParameterChart(model_);
  heatmap_ = new HeatmapView(model_);
  throughput_ = new ThroughputChart(model_);

  shape_ = new QComboBox;
  shape_->setMinimumWidth(240);
  log_ = new QCheckBox(tr("Log y axis"));
  log_->setObjectName(QStringLiteral("logAxis"));
  noise_ = new QCheckBox(tr("Noise bars"));
  noise_->setObjectName(QStringLiteral("noiseBars"));
  noise_->setChecked(true);
  noise_->setToolTip(
      tr("Each measured trial's spread on the latency and × best charts: a bar from median − std to median + std, "
         "within the samples' min and max (hover a point for its numbers and sample count)"));
  yMetric_ = new QComboBox;
  yMetric_->setObjectName(QStringLiteral("yMetric"));
  yMetric_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  yMetric_->setToolTip(
      tr("What the two scatter charts plot: the median latency; × best, each trial's median over its shape's best "
         "ok median (the vs_best column of a trials CSV export; log axis, 1 = the best); or a number the run "
         "recorded beside it (an imported Kernel Tuner cache's GFLOP/s, energy, power)"));
  xParam_ = new QComboBox;
  heatShape_ = new QComboBox;
  heatShape_->setObjectName(QStringLiteral("heatmapShape"));
  heatShape_->setToolTip(
      tr("The heatmap shows one shape: the best of different shapes' latencies would mean nothing."));
  heatShape_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  heatX_ = new QComboBox;
  heatY_ = new QComboBox;
  metric_ = new QComboBox;
  metric_->addItem(tr("TFLOP/s"));
  metric_->addItem(tr("GB/s"));
  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(tr("Shape:")));
  top->addWidget(shape_);
  top->addWidget(new QLabel(tr("y:")));
  top->addWidget(yMetric_);
  top->addWidget(log_);
  top->addWidget(noise_);
  top->addStretch();
  top->addWidget(new QLabel(tr("Wheel or drag a box to zoom · Shift-drag to pan · double-click to reset")));

  auto* paramOptions = new QWidget;
  auto* pl = new QHBoxLayout(paramOptions);
  pl->setContentsMargins(0, 0, 0, 0);
  pl->addWidget(new QLabel(tr("x:")));
  pl->addWidget(xParam_);
  auto* heatOptions = new QWidget;
  auto* hl = new QHBoxLayout(heatOptions);
  hl->setContentsMargins(0, 0, 0, 0);
  hl->addWidget(new QLabel(tr("shape:")));
  hl->addWidget(heatShape_);
  hl->addWidget(new QLabel(tr("x:")));
  hl->addWidget(heatX_);
  hl->addWidget(new QLabel(tr("y:")));
  hl->addWidget(heatY_);
  auto* metricOptions = new QWidget;
  auto* ml = new QHBoxLayout(metricOptions);
  ml->setContentsMargins(0, 0, 0, 0);
  ml->addWidget(metric_);

  auto* grid = new QGridLayout;
  grid->addWidget(framed(order_, QStringLiteral("latency_order"), nullptr), 0, 0);
  grid->addWidget(framed(parameter_, QStringLiteral("latency_vs_parameter"), paramOptions), 0, 1);
  grid->addWidget(framed(heatmap_, QStringLiteral("heatmap"), heatOptions), 1, 0);
  grid->addWidget(framed(throughput_, QStringLiteral("throughput"), metricOptions), 1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(buildBrushNote());
  layout->addLayout(grid, 1);

  connect(shape_, &QComboBox::currentIndexChanged, this, &LandscapePage::applyShape);
  connect(heatShape_, &QComboBox::currentIndexChanged, this,
          [this] { heatmap_->setShapeFilter(heatShape_->currentData().toString()); });
  connect(log_, &QCheckBox::toggled, this, [this](bool on) {
    order_->setLogScale(on);
    parameter_->setLogScale(on);
  });
  connect(noise_, &QCheckBox::toggled, this, [this](bool on) {
    order_->setShowNoise(on);
    parameter_->setShowNoise(on);
  });
  connect(xParam_, &QComboBox::currentTextChanged, parameter_, &ParameterChart::setParameter);
  connect(yMetric_, &QComboBox::currentIndexChanged, this, &LandscapePage::applyYMetric);
  connect(yMetric_, &QComboBox::activated, this, [this] { preferredY_ = yMetric(); });
  connect(model_, &TrialsModel::metricNamesChanged, this, &LandscapePage::refreshMetrics);
  const auto heat = [this] { heatmap_->setParameters(heatX_->currentText(), heatY_->currentText()); };
  connect(heatX_, &QComboBox::currentTextChanged, this, heat);
  connect(heatY_, &QComboBox::currentTextChanged, this, heat);
  connect(metric_, &QComboBox::currentIndexChanged, this, [this](int i) {
    throughput_->setMetric(i == 0 ? ThroughputChart::Metric::Tflops : ThroughputChart::Metric::Gbps);
  });
  for (TrialChartView* chart : std::initializer_list<TrialChartView*>{order_, parameter_, throughput_})
    connect(chart, &TrialChartView::trialClicked, this, &LandscapePage::trialClicked);
  connect(heatmap_, &HeatmapView::trialClicked, this, &LandscapePage::trialClicked);
  connect(model_, &TrialsModel::problemKeysChanged, this, &LandscapePage::refreshChoices);
  connect(model_, &QAbstractItemModel::columnsInserted, this, &LandscapePage::refreshChoices);
  connect(model_, &QAbstractItemModel::modelReset, this, [this] {
    choicesInformed_ = false;
    refreshChoices();
  });
  connect(model_, &QAbstractItemModel::rowsInserted, this, [this] {
    if (!choicesInformed_) refreshChoices();
  });
  refreshChoices();
  refreshMetrics();
}

QWidget* LandscapePage::buildBrushNote() {
  brushNote_ = new QFrame;
  brushNote_->setObjectName(QStringLiteral("brushNote"));
  // The brush's orange, as on the Trials page's Brushed button and the Analyse page's rings.
  brushNote_->setStyleSheet(
      QStringLiteral("#brushNote { background:#fff3e0; border:1px solid #ef6c00; "
                     "border-radius:3px; }"));
  brushText_ = new QLabel;
  brushText_->setObjectName(QStringLiteral("brushNoteText"));
  brushText_->setWordWrap(true);
  auto* clear = new QPushButton(tr("Clear brush"));
  clear->setObjectName(QStringLiteral("clearBrush"));
  clear->setToolTip(
      tr("Clears the brushes on the Analyse page's parallel coordinates: every page shows every "
         "trial again"));
  auto* layout = new QHBoxLayout(brushNote_);
  layout->setContentsMargins(8, 3, 4, 3);
  layout->addWidget(brushText_, 1);
  layout->addWidget(clear);
  TrialBrush* brush = model_->brush();
  connect(clear, &QPushButton::clicked, brush, &TrialBrush::clear);
  connect(brush, &TrialBrush::changed, this, &LandscapePage::followBrush);
  followBrush();
  return brushNote_;
}

void LandscapePage::followBrush() {
  const TrialBrush* brush = model_->brush();
  brushNote_->setVisible(brush->active());
  if (!brush->active()) return;
  const QString shape = model_->keyLabels().label(brush->shape());
  brushText_->setText(
      brush->ids().isEmpty()
          ? tr("A brush on the Analyse page keeps no trial of %1: every trial is dimmed. Clear it here, or click "
               "the brushed axes on the Analyse page.")
                .arg(shape)
          : tr("Brushed on the Analyse page: %1 of %2 drawn as they are, every other trial dimmed. Clear the brush "
               "here, or click the brushed axes on the Analyse page, to see them all again.")
                .arg(brush->ids().size() == 1 ? tr("1 trial") : tr("%L1 trials").arg(brush->ids().size()), shape));
}

QString LandscapePage::brushNoteText() const { return brushNote_->isHidden() ? QString() : brushText_->text(); }

QString LandscapePage::yMetric() const { return yMetric_->currentData().toString(); }

void LandscapePage::setYMetric(const QString& name) {
  preferredY_ = name;
  yMetric_->setCurrentIndex(std::max(0, yMetric_->findData(name)));
}

void LandscapePage::refreshMetrics() {
  // Latency always; recorded metrics when the run has them. The user's (or the saved) choice
  // comes back whenever a run offers it.
  const QString want = preferredY_;
  {
    QSignalBlocker block(yMetric_);
    yMetric_->clear();
    yMetric_->addItem(tr("median latency"), QString());
    yMetric_->addItem(tr("× best (distance from best)"), ChartMetric::vsBestName());
    for (const QString& name : model_->metricNames()) yMetric_->addItem(name, name);
    yMetric_->setCurrentIndex(std::max(0, yMetric_->findData(want)));
  }
  applyYMetric();
}

void LandscapePage::applyYMetric() {
  const ChartMetric metric(yMetric());
  // × best reads on a log axis (2× slower as far from 1 as 2× faster would be); the user's own
  // choice comes back with another metric.
  if (metric.isVsBest() != logForVsBest_) {
    logForVsBest_ = metric.isVsBest();
    if (logForVsBest_) userLog_ = log_->isChecked();
    log_->setChecked(logForVsBest_ || userLog_);
  }
  order_->setYMetric(metric);
  parameter_->setYMetric(metric);
}

void LandscapePage::exportChart(QWidget* chart, const QString& file) {
  if (chart == heatmap_)
    heatmap_->exportTo(file);
  else
    static_cast<TrialChartView*>(chart)->exportTo(file);
}

QWidget* LandscapePage::framed(QWidget* chart, const QString& name, QWidget* options) {
  auto* frame = new QWidget;
  auto* exportButton =
      new ExportButton([name] { return name; }, [this, chart](const QString& file) { exportChart(chart, file); }, this);
  exportButton->addFormat(QStringLiteral("png"), tr("Save as PNG…"));
  exportButton->addFormat(QStringLiteral("svg"), tr("Save as SVG…"));
  exportButton->addFormat(QStringLiteral("csv"), tr("Save data as CSV…"));
  auto* layout = new QVBoxLayout(frame);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addLayout(exportBar(options, exportButton));
  layout->addWidget(chart, 1);
  frame->setObjectName(name);
  return frame;
}

void LandscapePage::setDevice(const DeviceInfo& device) { throughput_->setDevice(device); }

void LandscapePage::setSpace(const SearchSpace& space) {
  space_ = space;
  choicesInformed_ = false;
  refreshChoices();
}

QStringList LandscapePage::rankedParameters() const {
  // Parameters that varied most among the measured trials make the most telling axes; one that
  // took a single value is a flat line (an imported cache records one power limit of a space that
  // lists many). Before anything is measured, the space's candidate lists say it; without them,
  // the trials seen so far.
  const QStringList params = model_->parameters();
  const auto& trials = model_->trials();
  const bool measured = std::any_of(trials.begin(), trials.end(), [](const Trial& t) { return t.stats.count > 0; });
  std::vector<std::pair<int, int>> ranked;  // (-distinct values, position)
  for (qsizetype i = 0; i < params.size(); ++i) {
    const std::string name = sstr(params[i]);
    const Parameter* p = space_.find(name);
    if (p && !measured) {
      ranked.emplace_back(-static_cast<int>(p->values.size()), static_cast<int>(i));
      continue;
    }
    std::set<ParamValue> values;
    // A strided sample is enough to tell a varying parameter from a fixed one.
    const std::size_t stride = std::max<std::size_t>(1, trials.size() / 20000);
    for (std::size_t r = 0; r < trials.size(); r += stride)
      if ((!measured || trials[r].stats.count > 0) && trials[r].config.has(name))
        values.insert(trials[r].config.value(name));
    ranked.emplace_back(-static_cast<int>(values.size()), static_cast<int>(i));
  }
  std::stable_sort(ranked.begin(), ranked.end());
  QStringList out;
  for (const auto& r : ranked) out << params[r.second];
  return out;
}

void LandscapePage::refreshChoices() {
  {
    const QString current = shape_->currentData().toString();
    QSignalBlocker block(shape_);
    shape_->clear();
    shape_->addItem(tr("all shapes"), QString());
    addKeyItems(shape_, model_->problemKeys(), model_->keyLabels());
    shape_->setCurrentIndex(std::max(0, shape_->findData(current)));
  }
  {
    const QString current = heatShape_->currentData().toString();
    QSignalBlocker block(heatShape_);
    heatShape_->clear();
    addKeyItems(heatShape_, model_->problemKeys(), model_->keyLabels());
    heatShape_->setCurrentIndex(std::max<int>(0, heatShape_->findData(current)));
    heatmap_->setShapeFilter(heatShape_->currentData().toString());
  }
  const bool informed = model_->rowCount() > 0 || !space_.parameters().empty();
  const QStringList params = model_->parameters();
  QStringList ranked;  // computed only when a default has to be picked
  const auto rank = [&](int i) {
    if (ranked.isEmpty()) ranked = rankedParameters();
    return ranked.value(i);
  };
  // Until trials arrive the choices are provisional; the first trials pick the defaults, after
  // which the user's (or the saved) choice stays while it exists.
  const auto choose = [&](QComboBox* combo, const QString& preferred, int position) {
    const QString current = combo->currentText();
    QSignalBlocker block(combo);
    combo->clear();
    combo->addItems(params);
    QString pick = current;
    if (!params.contains(pick) || (informed && !choicesInformed_))
      pick = params.contains(preferred) ? preferred : rank(position);
    combo->setCurrentIndex(std::max<int>(0, static_cast<int>(params.indexOf(pick))));
    return combo->currentText() != current;
  };
  if (choose(xParam_, preferred_[0], 0)) parameter_->setParameter(xParam_->currentText());
  const bool hx = choose(heatX_, preferred_[1], 0);
  const bool hy = choose(heatY_, preferred_[2], 1);
  if (hx || hy) heatmap_->setParameters(heatX_->currentText(), heatY_->currentText());
  choicesInformed_ = informed;
}

void LandscapePage::applyShape() {
  const QString key = shape_->currentData().toString();
  order_->setShapeFilter(key);
  parameter_->setShapeFilter(key);
  if (!key.isEmpty()) heatShape_->setCurrentIndex(heatShape_->findData(key));  // "all shapes" keeps the heatmap's
  throughput_->setShapeFilter(key);
}

void LandscapePage::setHighlightedTrial(qint64 id) {
  order_->setHighlightedTrial(id);
  parameter_->setHighlightedTrial(id);
  heatmap_->setHighlightedTrial(id);
  throughput_->setHighlightedTrial(id);
}

void LandscapePage::saveSettings(QSettings& settings) const {
  settings.setValue(QStringLiteral("charts/log"), logForVsBest_ ? userLog_ : log_->isChecked());
  settings.setValue(QStringLiteral("charts/noise"), noise_->isChecked());
  settings.setValue(QStringLiteral("charts/x_parameter"), xParam_->currentText());
  settings.setValue(QStringLiteral("charts/heat_x"), heatX_->currentText());
  settings.setValue(QStringLiteral("charts/heat_y"), heatY_->currentText());
  settings.setValue(QStringLiteral("charts/metric"), metric_->currentIndex());
  settings.setValue(QStringLiteral("charts/y_metric"), preferredY_);
}

void LandscapePage::restoreSettings(const QSettings& settings) {
  userLog_ = settings.value(QStringLiteral("charts/log"), false).toBool();
  log_->setChecked(userLog_ || logForVsBest_);
  noise_->setChecked(settings.value(QStringLiteral("charts/noise"), true).toBool());
  metric_->setCurrentIndex(settings.value(QStringLiteral("charts/metric"), 0).toInt());
  setYMetric(settings.value(QStringLiteral("charts/y_metric")).toString());
  // Parameter choices apply to the runs that have those parameters.
  preferred_ = {settings.value(QStringLiteral("charts/x_parameter")).toString(),
                settings.value(QStringLiteral("charts/heat_x")).toString(),
                settings.value(QStringLiteral("charts/heat_y")).toString()};
  choicesInformed_ = false;
  refreshChoices();
}

QStringList LandscapePage::exportAll(const QString& folder, const QString& stem) {
  QStringList files;
  const std::pair<QWidget*, QString> charts[] = {{order_, QStringLiteral("latency_order")},
                                                 {parameter_, QStringLiteral("latency_vs_parameter")},
                                                 {heatmap_, QStringLiteral("heatmap")},
                                                 {throughput_, QStringLiteral("throughput")}};
  for (const auto& [widget, name] : charts) {
    for (const QString& suffix : {QStringLiteral("png"), QStringLiteral("svg")}) {
      const QString file = QDir(folder).filePath(stem + QLatin1Char('_') + name + QLatin1Char('.') + suffix);
      exportChart(widget, file);
      files << file;
    }
  }
  return files;
}

}  // namespace ktune::gui
