#include "ktune/widgets/analyse_page.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <map>

#include "ktune/csv.h"
#include "ktune/widgets/chart_frame.h"
#include "ktune/widgets/importance_delegate.h"
#include "ktune/widgets/importance_model.h"
#include "ktune/widgets/key_labels.h"
#include "ktune/widgets/parallel_coordinates.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/slice_chart.h"
#include "ktune/widgets/trials_model.h"

namespace ktune::gui {

namespace {

constexpr int kSliceColumns = 5;
constexpr int kRefreshMs = 500;  // while trials stream in, the charts follow at most this often

const QString kImportance = QStringLiteral("parameter_importance");
const QString kSlices = QStringLiteral("parameter_slices");
const QString kParallel = QStringLiteral("parallel_coordinates");

QLabel* caption() {
  auto* label = new QLabel;
  label->setWordWrap(true);
  label->setTextFormat(Qt::PlainText);
  QFont f = label->font();
  f.setPointSizeF(f.pointSizeF() * 0.9);
  label->setFont(f);
  label->setStyleSheet(QStringLiteral("color:#424242"));
  return label;
}

std::string number(double v) { return sstr(QString::number(v, 'g', 10)); }

std::string slicesCsv(const std::string& run, const std::string& shape, const std::vector<ParameterSlice>& slices) {
  std::string out =
      csv::format_record({"run", "shape", "parameter", "value", "ok", "best_ns", "q1_ns", "median_ns", "q3_ns",
                          "max_ns", "slow_abort", "slow_abort_best_ns", "failed", "failed_by_status"});
  for (const ParameterSlice& s : slices)
    for (const SliceValue& v : s.values)
      out += csv::format_record({run, shape, s.parameter, v.value.text(), std::to_string(v.ok), number(v.best_ns),
                                 number(v.q1_ns), number(v.median_ns), number(v.q3_ns), number(v.max_ns),
                                 std::to_string(v.slow_abort), number(v.slow_abort_best_ns),
                                 std::to_string(v.failed_total()), v.failed_text()});
  return out;
}

}  // namespace

AnalysePage::AnalysePage(TrialsModel* model, QWidget* parent) : QWidget(parent), model_(model) {
  shape_ = new QComboBox;
  shape_->setObjectName(QStringLiteral("analyseShape"));
  shape_->setMinimumWidth(240);
  shape_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(tr("Shape:")));
  top->addWidget(shape_);
  top->addStretch();
  top->addWidget(new QLabel(tr("One shape at a time: what matters differs from shape to shape")));

  auto* upper = new QSplitter(Qt::Horizontal);
  upper->addWidget(buildImportance());
  upper->addWidget(buildParallel());
  upper->setStretchFactor(0, 2);
  upper->setStretchFactor(1, 3);
  upper->setSizes({520, 780});
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(upper);
  split->addWidget(buildSlices());
  split->setStretchFactor(0, 4);
  split->setStretchFactor(1, 5);
  split->setSizes({360, 460});
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(split, 1);

  timer_ = new QTimer(this);
  timer_->setSingleShot(true);
  connect(timer_, &QTimer::timeout, this, &AnalysePage::refresh);
  connect(shape_, &QComboBox::currentIndexChanged, this, &AnalysePage::refresh);
  connect(model_, &TrialsModel::problemKeysChanged, this, &AnalysePage::refreshShapes);
  connect(model_, &QAbstractItemModel::modelReset, this, [this] {
    refreshShapes();
    schedule();
  });
  connect(model_, &QAbstractItemModel::rowsInserted, this, &AnalysePage::schedule);
  connect(model_, &TrialsModel::winnersChanged, this, &AnalysePage::schedule);
  refreshShapes();
}

QWidget* AnalysePage::buildImportance() {
  importance_ = new ImportanceModel(this);
  table_ = new QTableView;
  table_->setObjectName(QStringLiteral("importanceTable"));
  table_->setModel(importance_);
  table_->setItemDelegateForColumn(ImportanceModel::ImportanceColumn, new ImportanceBarDelegate(table_));
  table_->setItemDelegateForColumn(ImportanceModel::CorrelationColumn, new ImportanceBarDelegate(table_));
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(22);
  table_->setSelectionMode(QAbstractItemView::NoSelection);
  table_->setFocusPolicy(Qt::NoFocus);
  QHeaderView* header = table_->horizontalHeader();
  header->setMinimumSectionSize(60);
  header->setSectionResizeMode(ImportanceModel::ParameterColumn, QHeaderView::ResizeToContents);
  header->setSectionResizeMode(ImportanceModel::ImportanceColumn, QHeaderView::Stretch);
  header->setSectionResizeMode(ImportanceModel::CorrelationColumn, QHeaderView::Stretch);
  header->setSectionResizeMode(ImportanceModel::ValuesColumn, QHeaderView::ResizeToContents);
  importanceCaption_ = caption();
  auto* body = new QWidget;
  auto* layout = new QVBoxLayout(body);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(table_, 1);
  layout->addWidget(importanceCaption_);
  auto* frame = new ChartFrame(kImportance, body);
  frame->setHeading(tr("Which parameters matter"));
  frame->setToolTip(
      tr("fANOVA (Hutter et al. 2014), the method of Optuna's default importance evaluator: a random forest of %1 "
         "trees (seeded: the same run gives the same numbers) learns log latency from the configs of the shape's ok "
         "trials, and each parameter's importance is the share of the forest's variance it explains on its own, "
         "over every value it took. A forest's impurity importance would follow where the search happened to "
         "sample and favour parameters with many values; fANOVA weighs each value alike. Log latency: doubling the "
         "time counts the same at 10 µs as at 10 ms.")
          .arg(importanceOptions().trees));
  frame->setExportTitle([this] { return exportTitle(tr("Parameter importance (fANOVA)")); });
  frame->setCsv([this] { return importance_->csv(runName(), sstr(shape())); });
  frames_ << frame;
  return frame;
}

QWidget* AnalysePage::buildParallel() {
  parallel_ = new ParallelCoordinates(model_);
  count_ = new QSpinBox;
  count_->setObjectName(QStringLiteral("bestCount"));
  count_->setRange(2, 1000);
  count_->setValue(parallel_->count());
  count_->setToolTip(tr("How many of the shape's fastest ok trials to draw"));
  auto* clear = new QPushButton(tr("Clear brushes"));
  auto* options = new QWidget;
  auto* ol = new QHBoxLayout(options);
  ol->setContentsMargins(0, 0, 0, 0);
  ol->addWidget(new QLabel(tr("Best")));
  ol->addWidget(count_);
  ol->addWidget(new QLabel(tr("configs · drag along an axis to brush, click it to clear")));
  ol->addWidget(clear);
  connect(count_, &QSpinBox::valueChanged, this, [this](int n) {
    parallel_->setCount(n);
    parallel_->refresh();
  });
  connect(clear, &QPushButton::clicked, parallel_, &ParallelCoordinates::clearBrushes);
  // The brush lives in the model's TrialBrush, which every page follows; cleared elsewhere (the
  // Landscape page's note), the axes' brushes go too.
  TrialBrush* brush = model_->brush();
  connect(parallel_, &ParallelCoordinates::selectionChanged, this,
          [this, brush](const QList<qint64>& ids, bool brushing) {
            if (brushing)
              brush->set(ids, parallel_->shape());
            else
              brush->clear();
          });
  connect(brush, &TrialBrush::changed, this, [this, brush] {
    if (!brush->active() && parallel_->brushing()) parallel_->clearBrushes();
    markBrushed();
  });
  connect(parallel_, &ParallelCoordinates::trialClicked, this, &AnalysePage::trialClicked);
  auto* frame = new ChartFrame(kParallel, parallel_, options);
  frame->setHeading(tr("What the best configs share"));
  frame->setExportTitle(
      [this] { return exportTitle(tr("Best %1 configs (parallel coordinates)").arg(parallel_->count())); });
  frame->setCsv([this] { return parallel_->csv(runName()); });
  frames_ << frame;
  return frame;
}

QWidget* AnalysePage::buildSlices() {
  sliceGrid_ = new QWidget;
  auto* grid = new QGridLayout(sliceGrid_);
  grid->setContentsMargins(0, 0, 0, 0);
  grid->setSpacing(4);
  slicesCaption_ = caption();
  auto* body = new QWidget;
  auto* layout = new QVBoxLayout(body);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(sliceGrid_, 1);
  layout->addWidget(slicesCaption_);
  log_ = new QCheckBox(tr("Log time axis"));
  log_->setObjectName(QStringLiteral("slicesLog"));
  log_->setChecked(true);
  log_->setToolTip(tr("Latencies a parameter spreads over orders of magnitude read best on a log axis"));
  connect(log_, &QCheckBox::toggled, this, &AnalysePage::refresh);
  auto* frame = new ChartFrame(kSlices, body, log_);
  frame->setHeading(tr("How latency moves with each parameter"));
  frame->setExportTitle([this] { return exportTitle(tr("Latency by parameter value (slices)")); });
  frame->setCsv([this] {
    std::vector<std::string> names;
    for (const QString& p : model_->parameters()) names.push_back(sstr(p));
    return slicesCsv(runName(), sstr(shape()), parameter_slices(model_->trials(), sstr(shape()), names));
  });
  frames_ << frame;
  auto* scroll = new QScrollArea;
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setWidget(frame);
  return scroll;
}

QString AnalysePage::shape() const { return shape_->currentData().toString(); }

void AnalysePage::setShape(const QString& problemKey) {
  shape_->setCurrentIndex(std::max(0, shape_->findData(problemKey)));
}

void AnalysePage::setBestCount(int n) { count_->setValue(n); }

void AnalysePage::setLogScale(bool on) { log_->setChecked(on); }

QList<SliceChart*> AnalysePage::slices() const { return slices_.mid(0, slicesShown_); }

QString AnalysePage::importanceCaption() const { return importanceCaption_->text(); }

QString AnalysePage::slicesCaption() const { return slicesCaption_->text(); }

ChartFrame* AnalysePage::frame(const QString& name) const {
  for (ChartFrame* f : frames_)
    if (f->name() == name) return f;
  return nullptr;
}

std::string AnalysePage::runName() const { return sstr(model_->runName()); }

QString AnalysePage::exportTitle(const QString& chart) const {
  // The whole key on a line of its own, its fields spaced so that a narrow picture wraps it.
  const QString key = shape().replace(QLatin1Char(','), QStringLiteral(", "));
  const QString run = model_->runName();
  return run.isEmpty() ? tr("%1\n%2").arg(chart, key) : tr("%1 · run %2\n%3").arg(chart, run, key);
}

void AnalysePage::refreshShapes() {
  const QString current = shape();
  QSignalBlocker block(shape_);
  shape_->clear();
  addKeyItems(shape_, model_->problemKeys(), model_->keyLabels());
  shape_->setCurrentIndex(std::max(0, shape_->findData(current)));
  if (shape() != current) schedule();
}

void AnalysePage::schedule() {
  dirty_ = true;
  // A hidden page catches up when shown; a shown one follows a live run at kRefreshMs.
  if (isVisible() && !timer_->isActive()) timer_->start(kRefreshMs);
}

void AnalysePage::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  if (dirty_) timer_->start(0);
}

void AnalysePage::refresh() {
  timer_->stop();
  dirty_ = false;
  const std::string key = sstr(shape());
  std::vector<std::string> names;
  for (const QString& p : model_->parameters()) names.push_back(sstr(p));
  importance_->setReport(parameter_importance(model_->trials(), key, names, importanceOptions()));
  const ImportanceReport& report = importance_->report();
  importanceCaption_->setText(key.empty() ? tr("No shape yet: open a run or start one.")
                                          : tr("%1. Correlation: ρ > 0 where larger values are slower, η for strings "
                                               "(no order, no sign). Hover the heading for the method and why.")
                                                .arg(qstr(report.message())));
  std::vector<std::string> ranked;
  for (const QString& p : importance_->rankedNames()) ranked.push_back(sstr(p));
  const std::vector<ParameterSlice> slices = parameter_slices(model_->trials(), key, ranked);
  showSlices(slices);

  QStringList axes;
  for (const ParameterSlice& s : slices)
    if (s.values.size() > 1) axes << qstr(s.parameter);
  parallel_->setShape(shape());
  parallel_->setParameters(axes);
  parallel_->refresh();
  markBrushed();
}

void AnalysePage::brushFastest(int n) {
  if (dirty_) refresh();
  const QList<qint64> shown = parallel_->shownTrials();
  if (shown.isEmpty() || n < 1) return;
  const int latency = static_cast<int>(parallel_->axisNames().size()) - 1;
  const qint64 last = shown[std::min<qsizetype>(n, shown.size()) - 1];
  parallel_->setBrush(latency, 0, parallel_->positionOf(last, latency));
}

void AnalysePage::showSlices(const std::vector<ParameterSlice>& slices) {
  std::map<std::string, const ParameterImportance*> byName;
  for (const ParameterImportance& p : importance_->report().parameters) byName[p.name] = &p;
  std::vector<double> medians;
  for (const ParameterSlice& s : slices)
    for (const SliceValue& v : s.values)
      if (v.ok) medians.push_back(v.median_ns);
  const TimeUnit unit = timeUnitFor(medianOf(medians));
  const bool ok = importance_->report().status == ImportanceReport::Status::Ok;
  auto* grid = static_cast<QGridLayout*>(sliceGrid_->layout());
  QStringList fixed;
  int shown = 0;
  for (std::size_t j = 0; j < slices.size(); ++j) {
    const ParameterSlice& s = slices[j];
    if (s.values.size() == 1)
      fixed << QStringLiteral("%1 = %2").arg(qstr(s.parameter), model_->parameterText(s.parameter, s.values[0].value));
    if (s.values.size() < 2) continue;
    if (shown == slices_.size()) slices_ << new SliceChart(model_);
    SliceChart* chart = slices_[shown];
    const ParameterImportance* p = byName[s.parameter];
    QString title = qstr(s.parameter);
    if (ok && p && p->fixed())
      title = tr("%1 · fixed in the ok trials").arg(title);
    else if (ok && p)
      title = tr("%1 · importance %2 %").arg(title).arg(p->importance * 100, 0, 'f', 0);
    chart->setSlice(s, unit, log_->isChecked(), title);
    grid->addWidget(chart, shown / kSliceColumns, shown % kSliceColumns);
    chart->show();
    ++shown;
  }
  for (int i = shown; i < slices_.size(); ++i) {
    grid->removeWidget(slices_[i]);
    slices_[i]->hide();
  }
  slicesShown_ = shown;
  QString text = shown
                     ? tr("Box: the middle half of the ok trials at a value (quartiles), the line across it their "
                          "median; whisker: best to slowest; dot: best. ↑: the fastest slow_abort trial there (stopped "
                          "early, so at least that slow). ✕n: n trials failed at that value (hover for their "
                          "statuses). Orange rings: the trials brushed on the parallel coordinates.")
                     : tr("No parameter took more than one value among this shape's trials yet.");
  if (!fixed.isEmpty())
    text += QLatin1Char(' ') + tr("Fixed in this shape (one value): %1.").arg(fixed.join(QStringLiteral(", ")));
  slicesCaption_->setText(text);
}

void AnalysePage::markBrushed() {
  for (SliceChart* chart : slices()) {
    std::vector<std::pair<ParamValue, double>> marks;
    const std::string& name = chart->slice().parameter;
    for (qint64 id : model_->brush()->ids()) {
      const int row = model_->rowForId(id);
      if (row < 0 || !model_->trial(row).config.has(name)) continue;
      marks.emplace_back(model_->trial(row).config.value(name), model_->trial(row).stats.median_ns);
    }
    chart->setMarked(marks);
  }
}

QStringList AnalysePage::exportAll(const QString& folder, const QString& stem) {
  if (dirty_) refresh();
  QStringList files;
  for (ChartFrame* f : frames_)
    for (const QString& suffix : {QStringLiteral("png"), QStringLiteral("svg"), QStringLiteral("csv")}) {
      const QString file = QDir(folder).filePath(stem + QLatin1Char('_') + f->name() + QLatin1Char('.') + suffix);
      f->exportTo(file);
      files << file;
    }
  return files;
}

void AnalysePage::saveSettings(QSettings& settings) const {
  settings.setValue(QStringLiteral("analyse/best_count"), count_->value());
  settings.setValue(QStringLiteral("analyse/log"), log_->isChecked());
}

void AnalysePage::restoreSettings(const QSettings& settings) {
  setBestCount(settings.value(QStringLiteral("analyse/best_count"), 20).toInt());
  setLogScale(settings.value(QStringLiteral("analyse/log"), true).toBool());
}

}  // namespace ktune::gui
