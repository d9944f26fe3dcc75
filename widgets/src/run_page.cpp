#include "ktune/widgets/run_page.h"

#include <QDateTime>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QTableWidget>
#include <QToolButton>
#include <QVBoxLayout>
#include <set>

#include "ktune/widgets/key_labels.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/trials_model.h"

namespace ktune::gui {

namespace {
const QColor kFlagColour(0xe6, 0x51, 0x00);
}  // namespace

RunPage::RunPage(TrialsModel* model, QWidget* parent) : QWidget(parent), model_(model) {
  start_ = new QAction(QIcon(QStringLiteral(":/icons/start.svg")), tr("&Start"), this);
  start_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
  start_->setToolTip(tr("Start tuning with the Setup page's settings (Ctrl+R)"));
  pause_ = new QAction(QIcon(QStringLiteral(":/icons/pause.svg")), tr("&Pause"), this);
  pause_->setCheckable(true);
  pause_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_P));
  stop_ = new QAction(QIcon(QStringLiteral(":/icons/stop.svg")), tr("S&top"), this);
  stop_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Period));
  stop_->setToolTip(tr("Stop after the trial in flight; everything measured is kept (Ctrl+.)"));

  const auto button = [](QAction* action) {
    auto* b = new QToolButton;
    b->setDefaultAction(action);
    b->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    b->setIconSize(QSize(22, 22));
    return b;
  };
  title_ = new QLabel(tr("No run yet: set one up on the Setup page and press Start."));
  QFont big = title_->font();
  big.setPointSizeF(big.pointSizeF() * 1.2);
  big.setBold(true);
  title_->setFont(big);
  problem_ = new QLabel;
  problem_->setWordWrap(true);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(button(start_));
  buttons->addWidget(button(pause_));
  buttons->addWidget(button(stop_));
  buttons->addSpacing(16);
  buttons->addWidget(title_, 1);

  progress_ = new QProgressBar;
  progress_->setFormat(tr("%v / %m configs measured (%p%)"));
  progress_->setToolTip(tr("Configs the strategy measures; pruned configs never run and are not counted here"));
  progress_->setRange(0, 1);
  progress_->setValue(0);
  measured_ = new QLabel(QStringLiteral("0"));
  pruned_ = new QLabel(QStringLiteral("0"));
  failed_ = new QLabel(QStringLiteral("0"));
  failed_->setToolTip(
      tr("Measured configs that did not pass: compile or launch errors, wrong results, crashes, timeouts"));
  rate_ = new QLabel(QStringLiteral("–"));
  eta_ = new QLabel(QStringLiteral("–"));
  elapsed_ = new QLabel(QStringLiteral("–"));
  auto* numbers = new QHBoxLayout;
  for (auto [name, label] :
       {std::pair{tr("Measured:"), measured_}, std::pair{tr("Pruned:"), pruned_}, std::pair{tr("Failed:"), failed_},
        std::pair{tr("Trials per second:"), rate_}, std::pair{tr("ETA:"), eta_}, std::pair{tr("Elapsed:"), elapsed_}}) {
    numbers->addWidget(new QLabel(name));
    numbers->addWidget(label);
    numbers->addSpacing(20);
  }
  numbers->addStretch();

  statusTable_ = new QTableWidget(0, 2);
  statusTable_->setHorizontalHeaderLabels({tr("Status"), tr("Trials")});
  bestTable_ = new QTableWidget(0, ColumnCount);
  bestTable_->setObjectName(QStringLiteral("winners"));
  bestTable_->setHorizontalHeaderLabels(
      {tr("Shape"), tr("Winner"), tr("Median"), tr("Chosen by"), tr("Search median"), tr("TFLOP/s"), tr("Trials")});
  bestTable_->horizontalHeaderItem(MedianColumn)
      ->setToolTip(tr("The number the winner was chosen by: its re-measure's, or the search's where nothing was "
                      "re-measured. results.json, the registry and the CLI summary hold the same."));
  bestTable_->horizontalHeaderItem(SearchColumn)->setToolTip(tr("The winner's own median in the search"));
  flagBanner_ = new QLabel;
  flagBanner_->setObjectName(QStringLiteral("flagBanner"));
  flagBanner_->setWordWrap(true);
  flagBanner_->setTextFormat(Qt::RichText);
  flagBanner_->setStyleSheet(QStringLiteral("QLabel { background:#fff3e0; border:1px solid #ffb74d; padding:4px; }"));
  flagBanner_->hide();
  for (QTableWidget* t : {statusTable_, bestTable_}) {
    t->verticalHeader()->hide();
    t->verticalHeader()->setDefaultSectionSize(22);
    t->setEditTriggers(QAbstractItemView::NoEditTriggers);
    t->horizontalHeader()->setStretchLastSection(true);
  }
  // The config is the widest and most telling column; the numbers keep their size. A long config
  // is cut at the cell's end, not wrapped out of sight.
  bestTable_->setWordWrap(false);
  bestTable_->horizontalHeader()->setStretchLastSection(false);
  bestTable_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  bestTable_->horizontalHeader()->setSectionResizeMode(ConfigColumn, QHeaderView::Stretch);
  statusTable_->setMaximumWidth(260);
  log_ = new QPlainTextEdit;
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(5000);

  auto* statusBox = new QGroupBox(tr("Trials per status"));
  (new QVBoxLayout(statusBox))->addWidget(statusTable_);
  auto* bestBox = new QGroupBox(tr("Winner per shape"));
  auto* bestLayout = new QVBoxLayout(bestBox);
  bestLayout->addWidget(flagBanner_);
  bestLayout->addWidget(bestTable_);
  auto* tables = new QHBoxLayout;
  tables->addWidget(statusBox);
  tables->addWidget(bestBox, 1);
  auto* logBox = new QGroupBox(tr("Log"));
  (new QVBoxLayout(logBox))->addWidget(log_);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(buttons);
  layout->addWidget(problem_);
  layout->addWidget(progress_);
  layout->addLayout(numbers);
  layout->addLayout(tables, 3);
  layout->addWidget(logBox, 2);

  connect(model_, &QAbstractItemModel::rowsInserted, this, [this](const QModelIndex&, int first, int last) {
    countRows(first, last);
    refreshTables();
  });
  connect(model_, &QAbstractItemModel::modelReset, this, &RunPage::recountAll);
  connect(model_, &TrialsModel::pruningChanged, this, &RunPage::refreshTables);
  connect(model_, &TrialsModel::winnersChanged, this, &RunPage::refreshTables);
  setRunning(false);
  recountAll();
}

void RunPage::setRunning(bool running) {
  start_->setEnabled(!running);
  pause_->setEnabled(running);
  stop_->setEnabled(running);
  if (!running) pause_->setChecked(false);
}

void RunPage::setPaused(bool paused) {
  pause_->setChecked(paused);
  if (paused) appendLog(tr("Paused: the trial in flight finishes, then the tuner waits."));
}

void RunPage::setRunTitle(const QString& title) { title_->setText(title); }

std::uint64_t RunPage::statusCount(TrialStatus status) const {
  if (status == TrialStatus::Pruned) return model_->prunedCount();
  const auto it = counts_.find(status);
  return it == counts_.end() ? 0 : it->second;
}

void RunPage::countRows(int first, int last) {
  for (int row = first; row <= last; ++row) {
    const Trial& t = model_->trial(row);
    if (t.status == TrialStatus::Pruned) continue;  // never ran: counted from the pruning record
    ++counts_[t.status];
    ++trialsPerShape_[t.problem_key];
    if (t.status != TrialStatus::Ok) continue;
    auto it = best_.find(t.problem_key);
    if (it == best_.end() || t.stats.median_ns < it->second.median_ns)
      best_[t.problem_key] = Best{t.stats.median_ns, row};
  }
}

void RunPage::recountAll() {
  counts_.clear();
  best_.clear();
  trialsPerShape_.clear();
  if (model_->rowCount() > 0) {
    countRows(0, model_->rowCount() - 1);
    const std::uint64_t measured = measuredCount();
    const std::uint64_t planned = std::max(model_->plannedCount(), measured);
    progress_->setRange(0, static_cast<int>(std::min<std::uint64_t>(std::max<std::uint64_t>(planned, 1), INT_MAX)));
    progress_->setValue(static_cast<int>(std::min<std::uint64_t>(measured, INT_MAX)));
  }
  refreshTables();
}

std::uint64_t RunPage::measuredCount() const {
  std::uint64_t n = 0;
  for (const auto& [status, count] : counts_) n += count;
  return n;
}

// slow_abort trials ran and validated: stopped early as lower bounds, they did not fail.
std::uint64_t RunPage::failedCount() const {
  return measuredCount() - statusCount(TrialStatus::Ok) - statusCount(TrialStatus::SlowAbort);
}

void RunPage::refreshTables() {
  measured_->setText(QLocale().toString(static_cast<qulonglong>(measuredCount())));
  pruned_->setText(QLocale().toString(static_cast<qulonglong>(statusCount(TrialStatus::Pruned))));
  failed_->setText(QLocale().toString(static_cast<qulonglong>(failedCount())));
  statusTable_->setRowCount(0);
  for (TrialStatus s : kAllTrialStatuses) {
    const std::uint64_t n = statusCount(s);
    if (n == 0) continue;
    const int row = statusTable_->rowCount();
    statusTable_->insertRow(row);
    auto* name = new QTableWidgetItem(statusLabel(s));
    name->setForeground(statusColor(s));
    QFont bold = name->font();
    bold.setBold(true);
    name->setFont(bold);
    statusTable_->setItem(row, 0, name);
    auto* count = new QTableWidgetItem(QLocale().toString(static_cast<qulonglong>(n)));
    count->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    statusTable_->setItem(row, 1, count);
  }
  std::set<std::string, KeyLess> keys;
  for (const auto& [key, trials] : trialsPerShape_) keys.insert(key);
  for (const auto& [key, winner] : model_->winners()) keys.insert(key);
  bestTable_->setRowCount(static_cast<int>(keys.size()));
  const KeyLabels labels(std::vector<std::string>(keys.begin(), keys.end()));
  bestTable_->horizontalHeaderItem(ShapeColumn)
      ->setToolTip(labels.common().isEmpty()
                       ? QString()
                       : tr("What tells the shapes apart; every shape has %1").arg(labels.common()));
  int row = 0;
  for (const std::string& key : keys) fillWinnerRow(row++, key, labels);
  refreshFlagBanner();
}

void RunPage::fillWinnerRow(int row, const std::string& key, const KeyLabels& labels) {
  const auto cell = [&](int column, const QString& text, const QString& tip = {}) {
    auto* item = new QTableWidgetItem(text);
    item->setToolTip(tip);
    bestTable_->setItem(row, column, item);
    return item;
  };
  const auto trials = trialsPerShape_.find(key);
  cell(ShapeColumn, labels.label(key), labels.toolTip(key));
  cell(TrialsColumn, QString::number(trials == trialsPerShape_.end() ? 0 : trials->second));
  if (const Winner* w = model_->winner(key)) {
    const QString tip = w->describe();
    cell(ConfigColumn, model_->configText(w->config), tip)->setIcon(w->icon());
    QTableWidgetItem* median = cell(MedianColumn, formatNs(w->stats.median_ns), tip);
    if (w->flagged()) {
      median->setIcon(w->icon());
      median->setForeground(kFlagColour);
    }
    cell(ChosenByColumn, chosenByText(w->choice.by), tip);
    cell(SearchColumn, formatNs(w->choice.search.median_ns), tr("The winner's own median in the search"));
    cell(TflopsColumn, w->tflops > 0 ? QString::number(w->tflops, 'f', 3) : QString(), tip);
    return;
  }
  const auto best = best_.find(key);
  if (best == best_.end()) {
    cell(ConfigColumn, tr("(no config passed yet)"));
    for (int c : {MedianColumn, ChosenByColumn, SearchColumn, TflopsColumn}) cell(c, QString());
    return;
  }
  // Not the winner: the best few of the search are timed again when the shape's search ends.
  const Trial& t = model_->trial(best->second.row);
  const QString tip =
      tr("The search's best so far, not a winner: when the shape's search ends, its best few configs "
         "are timed again in alternation and the fastest of those wins.");
  QTableWidgetItem* config = cell(ConfigColumn, tr("search best: %1").arg(model_->configText(t.config)), tip);
  QFont italic = config->font();
  italic.setItalic(true);
  config->setFont(italic);
  config->setForeground(QColor(0x61, 0x61, 0x61));
  cell(MedianColumn, QString(), tip);
  cell(ChosenByColumn, tr("not decided"), tip);
  cell(SearchColumn, formatNs(t.stats.median_ns), tip);
  cell(TflopsColumn, t.tflops > 0 ? QString::number(t.tflops, 'f', 3) : QString(), tip);
}

void RunPage::refreshFlagBanner() {
  QStringList sentences;
  int flagged = 0;
  for (const auto& [key, w] : model_->winners()) {
    if (!w.flagged()) continue;
    ++flagged;
    sentences += w.flagsText().split(QLatin1Char('\n'));
  }
  flagBanner_->setVisible(flagged > 0);
  if (flagged == 0) {
    flagBanner_->clear();
    flagBanner_->setToolTip({});
    return;
  }
  constexpr int kShown = 3;  // the rest in the tooltip: the table must stay in view
  QString html = QStringLiteral("<img src=':/icons/flagged.svg' width=16 height=16> <b>%1</b>: ")
                     .arg(flagged == 1 ? tr("1 winner flagged") : tr("%1 winners flagged").arg(flagged)) +
                 tr("the number may not hold. The Apply page leaves flagged winners unchecked until you accept "
                    "them.");
  for (const QString& line : sentences.mid(0, kShown)) html += QStringLiteral("<br>⚠ ") + line.toHtmlEscaped();
  if (sentences.size() > kShown) html += tr("<br>… and %1 more (hover)").arg(sentences.size() - kShown);
  flagBanner_->setText(html);
  flagBanner_->setToolTip(sentences.join(QLatin1Char('\n')));
}

QString RunPage::flagWarning() const { return flagBanner_->toolTip(); }

void RunPage::onRunStarted(const event::RunStarted& info) {
  progress_->setRange(0, static_cast<int>(std::min<std::uint64_t>(info.planned_trials, INT_MAX)));
  progress_->setValue(0);
  appendLog(tr("Run started on %1: %2 shape(s), %3 trials planned.")
                .arg(qstr(info.device.name))
                .arg(info.problems)
                .arg(info.planned_trials));
}

void RunPage::onProblemStarted(const event::ProblemStarted& info) {
  model_->addPruning({info.problem.key(), info.variables, info.space, info.planned});
  problem_->setText(tr("Shape %1: <b>%2</b> — space %L3 configs, %L4 valid, %L5 planned")
                        .arg(info.index + 1)
                        .arg(qstr(info.problem.key()).toHtmlEscaped())
                        .arg(static_cast<qulonglong>(info.space.total))
                        .arg(static_cast<qulonglong>(info.space.valid))
                        .arg(static_cast<qulonglong>(info.planned)));
}

void RunPage::onProgress(const event::Progress& p) {
  progress_->setRange(0, static_cast<int>(std::min<std::uint64_t>(std::max<std::uint64_t>(p.total, 1), INT_MAX)));
  progress_->setValue(static_cast<int>(std::min<std::uint64_t>(p.done, INT_MAX)));
  rate_->setText(QString::number(p.trials_per_s, 'f', p.trials_per_s < 10 ? 2 : 1));
  eta_->setText(p.done >= p.total ? tr("done") : formatDuration(p.eta_s));
  elapsed_->setText(formatDuration(p.elapsed_s));
}

void RunPage::onFinished(const RunSummary& summary) {
  elapsed_->setText(formatDuration(summary.elapsed_s));
  eta_->setText(summary.cancelled ? tr("stopped") : tr("done"));
  appendLog(summary.cancelled ? tr("Run stopped after %1; measured trials are saved in %2.")
                                    .arg(formatDuration(summary.elapsed_s), qstr(summary.run_dir.string()))
                              : tr("Run finished in %1; results in %2.")
                                    .arg(formatDuration(summary.elapsed_s), qstr(summary.run_dir.string())));
}

void RunPage::appendLog(const QString& message) {
  log_->appendPlainText(
      QStringLiteral("%1  %2").arg(QTime::currentTime().toString(QStringLiteral("HH:mm:ss")), message));
}

}  // namespace ktune::gui
