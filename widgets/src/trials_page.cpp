#include "ktune/widgets/trials_page.h"

#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QFontMetrics>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QScatterSeries>
#include <QSplitter>
#include <QTableView>
#include <QTextBrowser>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>
#include <QValueAxis>
#include <algorithm>

#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/status_delegate.h"
#include "ktune/widgets/trials_model.h"
#include "ktune/widgets/trials_proxy.h"

namespace ktune::gui {

TrialDetailView::TrialDetailView(const TrialsModel* model, QWidget* parent) : QWidget(parent), model_(model) {
  text_ = new QTextBrowser;
  text_->setOpenLinks(false);
  auto* chart = new QChart;
  chart->setTitle(tr("Samples in order"));
  chart->legend()->hide();
  chart->setMargins(QMargins(2, 2, 2, 2));
  samples_ = new QScatterSeries;
  samples_->setMarkerSize(6);
  samples_->setColor(QColor(0x15, 0x65, 0xc0));
  samples_->setPen(Qt::NoPen);
  median_ = new QLineSeries;
  median_->setPen(QPen(QColor(0xc6, 0x28, 0x28), 1.5, Qt::DashLine));
  chart->addSeries(samples_);
  chart->addSeries(median_);
  chart->createDefaultAxes();
  for (QAbstractAxis* axis : chart->axes()) static_cast<QValueAxis*>(axis)->setLabelFormat(QStringLiteral("%g"));
  chart->axes(Qt::Horizontal).first()->setTitleText(tr("sample"));
  chart->axes(Qt::Vertical).first()->setTitleText(tr("µs"));
  samplesView_ = new QChartView(chart);
  samplesView_->setRenderHint(QPainter::Antialiasing);
  samplesView_->setMinimumHeight(200);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(text_, 2);
  layout->addWidget(samplesView_, 3);
  showTrial(nullptr);
}

int TrialDetailView::sampleCount() const { return static_cast<int>(samples_->count()); }

void TrialDetailView::showTrial(const Trial* t) {
  if (!t) {
    text_->setHtml(tr("<i>Select a trial in the table or click a point in a chart.</i>"));
    samples_->clear();
    median_->clear();
    return;
  }
  QString html = QStringLiteral("<b>#%1</b> &nbsp; <span style='color:%2'><b>%3</b></span><br><small>%4</small><table>")
                     .arg(t->id)
                     .arg(statusColor(t->status).name(), statusLabel(t->status), qstr(t->problem_key).toHtmlEscaped());
  for (const auto& [name, value] : t->config.values())
    html += QStringLiteral("<tr><td>%1</td><td align=right><b>%2</b></td></tr>")
                .arg(qstr(name), model_->parameterText(name, value).toHtmlEscaped());
  html += QStringLiteral("</table>");
  html += winnerNote(*t);
  if (t->stats.count) {
    html += tr("<p>median %1 · mean %2 · std %3 · min %4 · max %5 · %6 samples (rel. error %7 %)</p>")
                .arg(formatNs(t->stats.median_ns), formatNs(t->stats.mean_ns), formatNs(t->stats.std_ns),
                     formatNs(t->stats.min_ns), formatNs(t->stats.max_ns))
                .arg(t->stats.count)
                .arg(t->stats.rel_error() * 100, 0, 'f', 2);
    if (t->tflops > 0) html += tr("<p>%1 TFLOP/s · %2 GB/s</p>").arg(t->tflops, 0, 'f', 3).arg(t->gbps, 0, 'f', 1);
  }
  if (!t->metrics.empty()) {
    QStringList recorded;
    for (const auto& [name, value] : t->metrics)
      recorded << QStringLiteral("%1 %2").arg(qstr(name).toHtmlEscaped()).arg(value, 0, 'g', 5);
    html += QStringLiteral("<p>%1</p>").arg(recorded.join(QStringLiteral(" · ")));
  }
  if (t->compile_time_s > 0) html += tr("<p>compile %1 s</p>").arg(t->compile_time_s, 0, 'f', 3);
  if (t->max_abs_error > 0 || t->mismatch_fraction > 0)
    html += tr("<p>max abs error %1 · mismatched %2 %</p>")
                .arg(t->max_abs_error, 0, 'g', 3)
                .arg(t->mismatch_fraction * 100, 0, 'g', 3);
  if (!t->error.empty())
    html += QStringLiteral("<pre style='color:#c62828'>%1</pre>").arg(qstr(t->error).toHtmlEscaped());
  text_->setHtml(html);

  QList<QPointF> points;
  double lo = 0, hi = 1;
  for (std::size_t i = 0; i < t->samples_ns.size(); ++i) {
    const double us = t->samples_ns[i] / 1e3;
    points.append(QPointF(static_cast<double>(i), us));
    lo = i ? std::min(lo, us) : us;
    hi = i ? std::max(hi, us) : us;
  }
  samples_->replace(points);
  const double n = std::max<double>(1, static_cast<double>(points.size()) - 1);
  median_->replace(t->stats.count ? QList<QPointF>{{0, t->stats.median_ns / 1e3}, {n, t->stats.median_ns / 1e3}}
                                  : QList<QPointF>{});
  QChart* chart = samplesView_->chart();
  chart->axes(Qt::Horizontal).first()->setRange(-0.5, n + 0.5);
  const double pad = std::max((hi - lo) * 0.1, hi * 0.01);
  chart->axes(Qt::Vertical).first()->setRange(std::max(0.0, lo - pad), hi + pad);
}

TrialsPage::TrialsPage(TrialsModel* model, QWidget* parent) : QWidget(parent), model_(model) {
  proxy_ = new TrialsFilterProxy(this);
  proxy_->setSourceModel(model_);
  table_ = new QTableView;
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(TrialsModel::IdColumn, Qt::AscendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setAlternatingRowColors(true);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(22);
  // Fixed row heights and no per-row sizing keep 100k rows cheap.
  table_->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setItemDelegateForColumn(TrialsModel::StatusColumn, new StatusDelegate(table_));
  table_->setColumnWidth(TrialsModel::IdColumn, 60);
  table_->setColumnWidth(TrialsModel::ShapeColumn, 200);
  table_->setColumnWidth(TrialsModel::PassColumn, 50);
  table_->setColumnWidth(TrialsModel::StatusColumn, 110);
  detail_ = new TrialDetailView(model_);

  shapeFilter_ = new QComboBox;
  shapeFilter_->setMinimumWidth(220);
  shapeFilter_->setSizeAdjustPolicy(QComboBox::AdjustToContents);  // shape labels are never cut
  passLabel_ = new QLabel(tr("Pass:"));
  passFilter_ = new QComboBox;
  passFilter_->setObjectName(QStringLiteral("passFilter"));
  passFilter_->setToolTip(tr("grouped_gemm tunes the forward pass and the two backward passes (dX, dW) separately"));
  textFilter_ = new QLineEdit;
  textFilter_->setPlaceholderText(tr("Filter by config, shape or error text"));
  textFilter_->setClearButtonEnabled(true);
  countLabel_ = new QLabel;
  auto* filters = new QHBoxLayout;
  filters->addWidget(new QLabel(tr("Status:")));
  for (TrialStatus s : kAllTrialStatuses) {
    auto* b = new QToolButton;
    b->setText(statusLabel(s));
    b->setCheckable(true);
    b->setProperty("status", static_cast<int>(s));
    if (s == TrialStatus::Pruned)
      b->setToolTip(tr("Pruned configs never ran: they are listed only when this is selected"));
    b->setStyleSheet(QStringLiteral("QToolButton:checked { background:%1; color:white; border-radius:3px; }")
                         .arg(statusColor(s).name()));
    connect(b, &QToolButton::toggled, this, &TrialsPage::applyStatusFilter);
    statusButtons_.append(b);
    filters->addWidget(b);
  }
  winnersOnly_ = new QToolButton;
  winnersOnly_->setObjectName(QStringLiteral("winnersOnly"));
  winnersOnly_->setIcon(QIcon(QStringLiteral(":/icons/winner.svg")));
  winnersOnly_->setText(tr("Winners"));
  winnersOnly_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  winnersOnly_->setCheckable(true);
  winnersOnly_->setToolTip(
      tr("Only each shape's winner: the config the re-measure after the search chose (its row "
         "shows the search's numbers; hover it for the number it won by)"));
  connect(winnersOnly_, &QToolButton::toggled, proxy_, &TrialsFilterProxy::setWinnersOnly);
  brushed_ = new QToolButton;
  brushed_->setObjectName(QStringLiteral("brushedOnly"));
  brushed_->setCheckable(true);
  brushed_->setToolTip(tr("Only the trials kept by the brushes on the Analyse page's parallel coordinates"));
  brushed_->setStyleSheet(
      QStringLiteral("QToolButton:checked { background:#ef6c00; color:white; border-radius:3px; }"));
  brushed_->hide();
  connect(brushed_, &QToolButton::toggled, this,
          [this](bool on) { proxy_->setOnlyTrials(on, model_->brush()->idSet()); });
  connect(model_->brush(), &TrialBrush::changed, this, &TrialsPage::followBrush);
  filters->addSpacing(12);
  filters->addWidget(winnersOnly_);
  filters->addWidget(brushed_);
  filters->addSpacing(12);
  filters->addWidget(new QLabel(tr("Shape:")));
  filters->addWidget(shapeFilter_);
  filters->addWidget(passLabel_);
  filters->addWidget(passFilter_);
  filters->addWidget(textFilter_, 1);
  filters->addWidget(countLabel_);

  auto* splitter = new QSplitter;
  splitter->addWidget(table_);
  splitter->addWidget(detail_);
  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(filters);
  layout->addWidget(splitter, 1);

  auto* textDebounce = new QTimer(this);
  textDebounce->setSingleShot(true);
  textDebounce->setInterval(200);
  connect(textFilter_, &QLineEdit::textChanged, textDebounce, qOverload<>(&QTimer::start));
  connect(textDebounce, &QTimer::timeout, this, [this] { proxy_->setText(textFilter_->text()); });
  connect(shapeFilter_, &QComboBox::currentIndexChanged, this,
          [this] { proxy_->setShape(shapeFilter_->currentData().toString()); });
  connect(passFilter_, &QComboBox::currentIndexChanged, this,
          [this] { proxy_->setPass(passFilter_->currentData().toString()); });
  connect(model_, &TrialsModel::problemKeysChanged, this, &TrialsPage::refreshShapes);
  connect(model_, &QAbstractItemModel::modelReset, this, &TrialsPage::fitParameterColumns);
  connect(model_, &QAbstractItemModel::columnsInserted, this, &TrialsPage::fitParameterColumns);
  connect(model_, &TrialsModel::pruningChanged, this, &TrialsPage::applyStatusFilter);
  connect(model_, &TrialsModel::winnersChanged, this, &TrialsPage::showCurrent);
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, &TrialsPage::onCurrentChanged);
  const auto updateCount = [this] {
    countLabel_->setText(tr("%L1 of %L2 trials").arg(proxy_->rowCount()).arg(model_->rowCount()));
  };
  connect(proxy_, &QAbstractItemModel::rowsInserted, this, updateCount);
  connect(proxy_, &QAbstractItemModel::rowsRemoved, this, updateCount);
  connect(proxy_, &QAbstractItemModel::modelReset, this, updateCount);
  connect(proxy_, &QAbstractItemModel::layoutChanged, this, updateCount);
  refreshShapes();
  updateCount();
}

QString TrialDetailView::winnerNote(const Trial& t) const {
  const Winner* w = model_->winner(t.problem_key);
  if (!w || model_->winnerRow(t.problem_key) != model_->rowForId(t.id)) return {};
  QString html = tr("<p style='background:#fff8e1'>★ <b>Winner of this shape</b>: %1. The numbers below are this "
                    "trial's, from the search.</p>")
                     .arg(w->numberText().toHtmlEscaped());
  if (w->flagged())
    html += QStringLiteral("<p style='color:#e65100'>⚠ %1</p>")
                .arg(w->flagsText().toHtmlEscaped().replace(QLatin1Char('\n'), QStringLiteral("<br>⚠ ")));
  return html;
}

void TrialsPage::refreshShapes() {
  const QString current = shapeFilter_->currentData().toString();
  QSignalBlocker block(shapeFilter_);
  shapeFilter_->clear();
  shapeFilter_->addItem(tr("all shapes"), QString());
  addKeyItems(shapeFilter_, model_->problemKeys(), model_->keyLabels());
  // The Shape column as wide as its widest label (bold: a winner's row), never cutting one; from
  // the labels, not the rows, which may be 100,000.
  QFont bold = table_->font();
  bold.setBold(true);
  int widest = 60;
  for (const QString& key : model_->problemKeys())
    widest = std::max(widest, QFontMetrics(bold).horizontalAdvance(model_->keyLabels().label(key)) + 16);
  table_->setColumnWidth(TrialsModel::ShapeColumn, std::min(widest, 480));
  shapeFilter_->setCurrentIndex(std::max(0, shapeFilter_->findData(current)));

  // The pass column and filter exist only where the shapes have a pass.
  const QStringList passes = model_->passes();
  const QString pass = passFilter_->currentData().toString();
  QSignalBlocker blockPass(passFilter_);
  passFilter_->clear();
  passFilter_->addItem(tr("all passes"), QString());
  for (const QString& p : passes) passFilter_->addItem(p, p);
  passFilter_->setCurrentIndex(std::max(0, passFilter_->findData(pass)));
  proxy_->setPass(passFilter_->currentData().toString());
  passLabel_->setVisible(!passes.isEmpty());
  passFilter_->setVisible(!passes.isEmpty());
  table_->setColumnHidden(TrialsModel::PassColumn, passes.isEmpty());
}

void TrialsPage::fitParameterColumns() {
  // Parameter values are short (64, true, .cg): a column as wide as its name, not the default
  // 100 px, keeps the times beside them in view.
  const QFontMetrics fm(table_->horizontalHeader()->font());
  for (int c = TrialsModel::FirstParamColumn; c < TrialsModel::FirstParamColumn + model_->parameters().size(); ++c)
    table_->setColumnWidth(c,
                           std::max(56, fm.horizontalAdvance(model_->headerData(c, Qt::Horizontal).toString()) + 28));
}

void TrialsPage::applyStatusFilter() {
  QSet<TrialStatus> statuses;
  for (QToolButton* b : statusButtons_)
    if (b->isChecked()) statuses.insert(static_cast<TrialStatus>(b->property("status").toInt()));
  // Pruned configs become rows only when someone asks to see them.
  if (statuses.contains(TrialStatus::Pruned)) model_->listPruned();
  proxy_->setStatuses(statuses);
}

void TrialsPage::setStatusFilter(const QSet<TrialStatus>& statuses) {
  for (QToolButton* b : statusButtons_) {
    QSignalBlocker block(b);
    b->setChecked(statuses.contains(static_cast<TrialStatus>(b->property("status").toInt())));
  }
  applyStatusFilter();
}

void TrialsPage::followBrush() {
  const TrialBrush* brush = model_->brush();
  brushed_->setVisible(brush->active());
  brushed_->setText(tr("Brushed: %L1").arg(brush->ids().size()));
  // A new brush is asked for to see its trials: it shows them at once.
  QSignalBlocker block(brushed_);
  brushed_->setChecked(brush->active());
  proxy_->setOnlyTrials(brush->active(), brush->idSet());
}

qint64 TrialsPage::currentTrial() const {
  const QModelIndex index = table_->currentIndex();
  return index.isValid() ? index.data(TrialsModel::TrialIdRole).toLongLong() : -1;
}

void TrialsPage::showCurrent() {
  const int row = model_->rowForId(currentTrial());
  detail_->showTrial(row >= 0 ? &model_->trial(row) : nullptr);
}

void TrialsPage::onCurrentChanged() {
  showCurrent();
  emit currentTrialChanged(currentTrial());
}

void TrialsPage::selectTrial(qint64 id) {
  const int row = model_->rowForId(id);
  if (row < 0 || id == currentTrial()) return;
  QModelIndex index = proxy_->mapFromSource(model_->index(row, 0));
  if (!index.isValid()) {
    for (QToolButton* b : statusButtons_) {
      QSignalBlocker block(b);
      b->setChecked(false);
    }
    QSignalBlocker blockShape(shapeFilter_);
    QSignalBlocker blockPass(passFilter_);
    QSignalBlocker blockText(textFilter_);
    QSignalBlocker blockWinners(winnersOnly_);
    QSignalBlocker blockBrushed(brushed_);
    winnersOnly_->setChecked(false);
    brushed_->setChecked(false);
    proxy_->setOnlyTrials(false);
    proxy_->setWinnersOnly(false);
    shapeFilter_->setCurrentIndex(0);
    passFilter_->setCurrentIndex(0);
    textFilter_->clear();
    // A pruned trial is listed only with its status selected.
    const bool pruned = model_->trial(row).status == TrialStatus::Pruned;
    for (QToolButton* b : statusButtons_)
      if (pruned && b->property("status").toInt() == static_cast<int>(TrialStatus::Pruned)) {
        QSignalBlocker block(b);
        b->setChecked(true);
      }
    proxy_->setStatuses(pruned ? QSet<TrialStatus>{TrialStatus::Pruned} : QSet<TrialStatus>{});
    proxy_->setShape({});
    proxy_->setPass({});
    proxy_->setText({});
    index = proxy_->mapFromSource(model_->index(row, 0));
  }
  table_->selectionModel()->setCurrentIndex(index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  table_->scrollTo(index, QAbstractItemView::PositionAtCenter);
}

}  // namespace ktune::gui
