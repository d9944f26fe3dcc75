#include "ktune/widgets/diff_page.h"

#include <QCheckBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QStackedWidget>
#include <QTableView>
#include <QTextBrowser>
#include <QVBoxLayout>
#include <algorithm>

#include "ktune/error.h"
#include "ktune/widgets/config_diff_panel.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/remeasure_job.h"
#include "ktune/widgets/run_compare_panel.h"
#include "ktune/widgets/run_document.h"
#include "ktune/widgets/trials_model.h"
#include "ktune/widgets/winner.h"

namespace ktune::gui {

DiffPage::DiffPage(RunDocument* document, QWidget* parent) : QWidget(parent), document_(document) {
  model_.setConfigText(document_->trials());
  root_ = new QLineEdit;
  root_->setText(QSettings()
                     .value(QStringLiteral("folders/registry"), QDir::current().filePath(QStringLiteral("tuned_data")))
                     .toString());
  auto* browse = new QPushButton(tr("Browse…"));
  auto* compareButton = new QPushButton(tr("Compare"));
  apply_ = new QPushButton(QIcon(QStringLiteral(":/icons/apply.svg")), tr("Apply selected"));
  apply_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return));
  remeasure_ = new QPushButton(tr("Re-measure"));
  remeasure_->setToolTip(
      tr("Time the registry's config and the run's side by side, in alternation, on the run's device "
         "now, and class each key from that paired ratio"));
  remeasure_->setEnabled(false);
  auto* compareRun = new QPushButton(tr("Compare with run…"));
  compareRun->setObjectName(QStringLiteral("compareWithRun"));
  compareRun->setToolTip(
      tr("Put another run folder (tuning_runs/<name>) beside this run, shape by shape: two devices, two dates, "
         "before and after a kernel change. A comparison only: it applies nothing."));
  comparePanel_ = new RunComparePanel(document_);
  acceptFlagged_ = new QCheckBox;
  acceptFlagged_->setObjectName(QStringLiteral("acceptFlagged"));
  acceptFlagged_->hide();
  job_ = new RemeasureJob(this);
  status_ = new QLabel;
  status_->setWordWrap(true);
  table_ = new QTableView;
  table_->setModel(&model_);
  table_->verticalHeader()->hide();
  table_->setWordWrap(false);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setColumnWidth(DiffModel::ApplyColumn, 60);
  table_->setColumnWidth(DiffModel::KeyColumn, 280);
  table_->setColumnWidth(DiffModel::ClassColumn, 70);
  table_->setColumnWidth(DiffModel::OldConfigColumn, 200);
  table_->setColumnWidth(DiffModel::NewConfigColumn, 240);
  table_->setColumnWidth(DiffModel::OldColumn, 90);
  table_->setColumnWidth(DiffModel::NewColumn, 100);
  table_->setColumnWidth(DiffModel::ComparedColumn, 140);
  report_ = new QTextBrowser;
  report_->setMaximumHeight(170);
  configPanel_ = new ConfigDiffPanel(QStringLiteral("configDiff"));

  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(tr("Registry folder:")));
  top->addWidget(root_, 1);
  top->addWidget(browse);
  top->addWidget(compareButton);
  top->addSpacing(16);
  top->addWidget(compareRun);
  auto* bottom = new QHBoxLayout;
  bottom->addWidget(status_, 1);
  bottom->addWidget(remeasure_);
  bottom->addWidget(apply_);
  // The registry diff and the comparison with another run share the page, one at a time: the
  // comparison has nothing to apply.
  registryView_ = new QWidget;
  auto* registryLayout = new QVBoxLayout(registryView_);
  registryLayout->setContentsMargins(0, 0, 0, 0);
  auto* middle = new QHBoxLayout;
  middle->addWidget(table_, 1);
  middle->addWidget(configPanel_);
  registryLayout->addLayout(middle, 1);
  registryLayout->addWidget(acceptFlagged_);
  registryLayout->addLayout(bottom);
  registryLayout->addWidget(report_);
  views_ = new QStackedWidget;
  views_->addWidget(registryView_);
  views_->addWidget(comparePanel_);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(views_, 1);

  model_.setConfirmForce([this](const DiffEntry& e) {
    return QMessageBox::warning(this, tr("Replace the registry's entry?"), confirmForceText(e),
                                QMessageBox::Yes | QMessageBox::No, QMessageBox::No) == QMessageBox::Yes;
  });
  connect(acceptFlagged_, &QCheckBox::toggled, this, [this](bool on) {
    model_.setAcceptFlagged(on);
    updateButtons();
  });
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Registry folder (tuned_data)"), root_->text());
    if (dir.isEmpty()) return;
    setRegistryRoot(dir);
    compare();
  });
  connect(compareButton, &QPushButton::clicked, this, [this] {
    closeComparison();
    compare();
  });
  connect(root_, &QLineEdit::returnPressed, this, [this] {
    closeComparison();
    compare();
  });
  connect(compareRun, &QPushButton::clicked, this, [this] {
    QSettings settings;
    const QString start =
        comparePanel_->otherDir().isEmpty()
            ? settings.value(QStringLiteral("folders/runs"), QDir::current().filePath(QStringLiteral("tuning_runs")))
                  .toString()
            : QFileInfo(comparePanel_->otherDir()).absolutePath();
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Compare with run (a run folder)"), start);
    if (!dir.isEmpty()) compareWithRun(dir);
  });
  connect(comparePanel_, &RunComparePanel::closeRequested, this, &DiffPage::closeComparison);
  connect(apply_, &QPushButton::clicked, this, &DiffPage::applySelected);
  connect(remeasure_, &QPushButton::clicked, this, [this] {
    if (job_->isRunning())
      job_->stop();
    else
      remeasure();
  });
  connect(job_, &RemeasureJob::progress, this, [this](const QString& key, int done, int total) {
    showMessage(tr("Re-measured %1 of %2 keys (last: %3)…").arg(done).arg(total).arg(key), false);
  });
  connect(job_, &RemeasureJob::finished, this, [this] { remeasureEnded(QString()); });
  connect(job_, &RemeasureJob::failed, this, [this](const QString& message) { remeasureEnded(message); });
  connect(&model_, &QAbstractItemModel::dataChanged, this, &DiffPage::updateButtons);
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) { showConfigDiff(current.row()); });
  // A new diff shows its first row's configs until another is picked.
  connect(&model_, &QAbstractItemModel::modelReset, this, [this] {
    showConfigDiff(model_.rowCount() > 0 ? 0 : -1);
    table_->resizeColumnToContents(DiffModel::KeyColumn);  // short labels leave room for the configs
    // "slower (clocks differ)" and "faster (paired)" whole; 70 px where every class is short.
    table_->resizeColumnToContents(DiffModel::ClassColumn);
    table_->setColumnWidth(DiffModel::ClassColumn, std::max(70, table_->columnWidth(DiffModel::ClassColumn)));
  });
  connect(document_, &RunDocument::resultsChanged, this, [this] {
    paired_.clear();  // another run: the verdicts were about the previous one
    compare();
  });
  compare();
}

void DiffPage::compareWithRun(const QString& dir) {
  views_->setCurrentWidget(comparePanel_);
  comparePanel_->compareWith(dir);
}

void DiffPage::closeComparison() { views_->setCurrentWidget(registryView_); }

bool DiffPage::isComparingRuns() const { return views_->currentWidget() == comparePanel_; }

void DiffPage::setRegistryRoot(const QString& root) {
  if (root != root_->text()) paired_.clear();
  root_->setText(root);
  QSettings().setValue(QStringLiteral("folders/registry"), root);
}

QString DiffPage::registryRoot() const { return root_->text(); }

void DiffPage::setBackends(const std::vector<std::unique_ptr<Backend>>* backends) {
  backends_ = backends;
  updateButtons();
}

void DiffPage::setDeviceBusy(const QString& reason) {
  busy_ = reason;
  updateButtons();
}

bool DiffPage::isRemeasuring() const { return job_->isRunning(); }

void DiffPage::updateButtons() {
  const bool running = job_->isRunning();
  apply_->setEnabled(canApply() && !running);
  remeasure_->setText(running ? tr("Stop re-measuring") : tr("Re-measure"));
  // Only keys whose registry config differs from the run's have a pair to time.
  const auto& entries = model_.diff().entries;
  const bool pairs = std::any_of(entries.begin(), entries.end(), [](const DiffEntry& e) {
    return e.old_entry && !e.old_entry->config.same_values(e.new_entry.config);
  });
  remeasure_->setEnabled(running ||
                         (backends_ && document_->results() && document_->metadata() && busy_.isEmpty() && pairs));
  if (!busy_.isEmpty() && !running) remeasure_->setToolTip(tr("Not now: %1").arg(busy_));
}

bool DiffPage::remeasure() {
  if (!backends_ || !document_->results() || !document_->metadata() || job_->isRunning()) return false;
  if (!busy_.isEmpty()) {
    showMessage(tr("Cannot re-measure now: %1.").arg(busy_), true);
    return false;
  }
  paired_.clear();
  jobDir_ = document_->dir();
  job_->start(*backends_, *document_->results(), *document_->metadata(), root_->text());
  updateButtons();
  showMessage(tr("Re-measuring on %1: the registry's config and the run's, in alternation…")
                  .arg(qstr(document_->metadata()->device.name)),
              false);
  return true;
}

void DiffPage::remeasureEnded(const QString& error) {
  updateButtons();
  if (document_->dir() != jobDir_) return;  // another run was opened meanwhile: these verdicts are not about it
  paired_ = job_->verdicts();
  int timed = 0;
  QStringList notes;
  for (const PairedVerdict& v : paired_) {
    if (v.note.empty())
      ++timed;
    else
      notes << qstr(v.key + ": " + v.note);
  }
  compare();
  QString text = error.isEmpty()
                     ? tr("Re-measured %1 key(s) in alternation on %2; their classes come from the paired "
                          "ratio (marked \"paired\").")
                           .arg(timed)
                           .arg(qstr(document_->metadata() ? document_->metadata()->device.name : ""))
                     : tr("Re-measuring stopped: %1. Keys judged before it keep their paired ratio.").arg(error);
  if (paired_.empty() && error.isEmpty())
    text = tr("Nothing to re-measure: no key has another config in the registry.");
  if (!notes.isEmpty())
    text += tr(" Not timed (the recorded numbers decide): %1").arg(notes.join(QStringLiteral("; ")));
  showMessage(text, !error.isEmpty());
  emit remeasured();
}

QString DiffPage::confirmForceText(const DiffEntry& e) const {
  const QString numbers = tr("%1 in the registry, %2 in this run (%3)")
                              .arg(formatNs(e.old_ns), formatNs(e.new_ns), DiffModel::comparedText(e));
  if (e.cls == DiffClass::Unmeasured)
    return tr("The registry's entry for %1 has no measurement: whether this run's config is faster is not known."
              "\n\nApply the run's config anyway?")
        .arg(qstr(e.key));
  if (e.cls == DiffClass::NotComparable)
    return tr("The registry's entry for %1 was measured %2, this run %3: %4 do not compare.\n\nApply the run's config "
              "anyway?")
        .arg(qstr(e.key), e.old_entry ? qstr(e.old_entry->benchmarking_method) : QString(),
             qstr(e.new_entry.benchmarking_method), numbers);
  const QString clocks = DiffModel::conditionsText(e);
  return tr("The registry's entry for %1 is faster: %2.%3\n\nApply the run's config anyway?")
      .arg(qstr(e.key), numbers, clocks.isEmpty() ? QString() : QStringLiteral("\n\n") + clocks);
}

void DiffPage::refreshAcceptFlagged() {
  // A new diff starts with flagged winners refused, as `ktune apply` without --accept-flagged.
  const QStringList keys = model_.flaggedKeys();
  QSignalBlocker block(acceptFlagged_);
  acceptFlagged_->setChecked(model_.acceptFlagged());
  acceptFlagged_->setVisible(!keys.isEmpty());
  QStringList labels;
  for (const QString& key : keys) labels << model_.keyLabels().label(key);
  acceptFlagged_->setText(tr("Accept flagged winners: %1").arg(labels.join(QStringLiteral("; "))));
  QStringList why;
  for (const DiffEntry& e : model_.diff().entries)
    if (e.new_entry.flags.any()) why << DiffModel::flagsText(e);
  acceptFlagged_->setToolTip(tr("Their numbers may not hold:\n%1\n\nChecked, their rows can be ticked and applied.")
                                 .arg(why.join(QLatin1Char('\n'))));
}

QString DiffPage::flaggedNote() const {
  const auto n = model_.flaggedKeys().size();
  if (n == 0) return {};
  return n == 1 ? tr(" 1 flagged winner stays unchecked unless you accept it.")
                : tr(" %1 flagged winners stay unchecked unless you accept them.").arg(n);
}

QString DiffPage::clocksNote() const {
  const auto& entries = model_.diff().entries;
  const auto n =
      std::count_if(entries.begin(), entries.end(), [](const DiffEntry& e) { return !e.conditions_note.empty(); });
  if (n == 0) return {};
  return n == 1 ? tr(" 1 verdict compares numbers taken at different SM clocks (\"clocks differ\"): Re-measure "
                     "times both configs at one clock.")
                : tr(" %1 verdicts compare numbers taken at different SM clocks (\"clocks differ\"): Re-measure "
                     "times both configs at one clock.")
                      .arg(n);
}

bool DiffPage::canApply() const {
  return document_->results() && document_->results()->state == "finished" && !model_.checkedKeys().empty();
}

QString DiffPage::statusText() const { return status_->text(); }
const ConfigDiffModel* DiffPage::configDiff() const { return configPanel_->model(); }
QString DiffPage::configTitle() const { return configPanel_->titleText(); }

QString DiffPage::reportText() const { return report_->toPlainText(); }

QString DiffPage::reportHtml(const ApplyReport& report) const {
  QString html = tr("<b>Wrote %1 entr%2 to %3</b>")
                     .arg(report.written.size())
                     .arg(report.written.size() == 1 ? "y" : "ies")
                     .arg(qstr(report.registry_file.string()).toHtmlEscaped());
  if (!report.backup_file.empty())
    html += tr("<br>previous file kept as %1").arg(qstr(report.backup_file.string()).toHtmlEscaped());
  html += QStringLiteral("<ul>");
  for (const DiffEntry& e : report.written)
    html += tr("<li>%1: %2 (%3, chosen by %4)</li>")
                .arg(qstr(e.key).toHtmlEscaped(), model_.configText(e.new_entry.config).toHtmlEscaped(),
                     formatNs(e.new_entry.latency_median_ns), chosenByText(e.new_entry.chosen_by));
  for (std::size_t i = 0; i < report.skipped.size(); ++i)
    html += tr("<li style='color:#757575'>skipped %1: %2</li>")
                .arg(qstr(report.skipped[i].key).toHtmlEscaped(), qstr(report.skip_reasons[i]).toHtmlEscaped());
  return html + QStringLiteral("</ul>");
}

void DiffPage::showMessage(const QString& text, bool error) { showStatus(status_, text, error); }

bool DiffPage::compare() {
  model_.setDiff({});
  refreshAcceptFlagged();
  updateButtons();
  if (!document_->results()) {
    showMessage(document_->hasRun()
                    ? tr("This run has no results.json yet (it did not finish): resume it, then compare.")
                    : tr("Open a finished run (File → Open Run…) or run one to compare it with the registry."),
                false);
    return false;
  }
  try {
    model_.setDiff(diff_run(*document_->results(), sstr(root_->text()), 0.02, paired_));
    refreshAcceptFlagged();
  } catch (const InputError& e) {
    showMessage(tr("Cannot compare: %1").arg(QString::fromUtf8(e.what())), true);
    return false;
  }
  int counts[5] = {0, 0, 0, 0, 0};
  for (const DiffEntry& e : model_.diff().entries) ++counts[static_cast<int>(e.cls)];
  const RunResults& run = *document_->results();
  const bool finished = run.state == "finished";
  showMessage(tr("Run %1 is %2 (%3). Against %4: %5 new, %6 faster, %7 slower, %8 same, %9 not comparable "
                 "(measured with another method). ")
                      .arg(qstr(run.run_name), qstr(run.state), qstr(describe_progress(run)),
                           qstr(model_.diff().registry_file.string()))
                      .arg(counts[0])
                      .arg(counts[1])
                      .arg(counts[2])
                      .arg(counts[3])
                      .arg(counts[4]) +
                  (finished ? tr("New and faster rows are checked; slower and not comparable ones need a confirmation.")
                            : tr("Its results are partial: resume the run to apply them.")) +
                  flaggedNote() + clocksNote(),
              !finished);
  updateButtons();
  return true;
}

std::optional<ApplyReport> DiffPage::applySelected() {
  const std::vector<std::string> keys = model_.checkedKeys();
  if (keys.empty() || !document_->results()) {
    showMessage(tr("Nothing is checked: tick the rows to write into the registry."), true);
    return std::nullopt;
  }
  ApplyOptions options;
  options.keys = keys;
  options.force = model_.forcedAny();
  options.paired = paired_;
  options.accept_flagged = model_.acceptFlagged();
  ApplyReport report;
  try {
    report = apply_run(*document_->results(), sstr(root_->text()), options);
  } catch (const std::exception& e) {
    showMessage(tr("Nothing was written: %1").arg(QString::fromUtf8(e.what())), true);
    return std::nullopt;
  }
  const QString html = reportHtml(report);
  compare();
  report_->setHtml(html);
  emit applied(report);
  return report;
}

void DiffPage::showConfigDiff(int row) {
  if (row < 0 || row >= model_.rowCount()) {
    configPanel_->clear(tr("Select a key to compare its configs parameter by parameter."));
    return;
  }
  const int changed = configPanel_->setChanges(model_.changes(row));
  const DiffEntry& e = model_.diff().entries[static_cast<std::size_t>(row)];
  const QString label = model_.keyLabels().label(e.key).toHtmlEscaped();
  QString title = !e.old_entry   ? tr("<b>%1</b>: new, the registry has no config").arg(label)
                  : changed == 0 ? tr("<b>%1</b>: the same config").arg(label)
                  : changed == 1 ? tr("<b>%1</b>: 1 parameter changed (≠)").arg(label)
                                 : tr("<b>%1</b>: %2 parameters changed (≠)").arg(label).arg(changed);
  // The selected row's clock note in full, where it can be read without hovering over the cell.
  configPanel_->setTitle(title, model_.keyLabels().toolTip(e.key), DiffModel::conditionsText(e));
}

}  // namespace ktune::gui
