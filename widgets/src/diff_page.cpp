#include "ktune/widgets/diff_page.h"

#include <QDir>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QTableView>
#include <QTextBrowser>
#include <QVBoxLayout>
#include <algorithm>

#include "ktune/error.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/remeasure_job.h"
#include "ktune/widgets/trials_model.h"
#include "ktune/widgets/run_document.h"

namespace ktune::gui {

namespace {

QColor classColor(DiffClass c) {
  switch (c) {
    case DiffClass::New: return QColor(0x15, 0x65, 0xc0);
    case DiffClass::Faster: return QColor(0x2e, 0x7d, 0x32);
    case DiffClass::Slower: return QColor(0xc6, 0x28, 0x28);
    case DiffClass::Same: return QColor(0x75, 0x75, 0x75);
    case DiffClass::NotComparable: return QColor(0xe6, 0x51, 0x00);
  }
  return Qt::black;
}

}  // namespace

bool DiffModel::needsForce(DiffClass c) { return c == DiffClass::Slower || c == DiffClass::NotComparable; }

int DiffModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(diff_.entries.size()); }
int DiffModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant DiffModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case ApplyColumn: return tr("Apply");
    case KeyColumn: return tr("Key");
    case ClassColumn: return tr("Class");
    case OldConfigColumn: return tr("Registry config");
    case NewConfigColumn: return tr("Run's config");
    case OldColumn: return tr("Registry median");
    case NewColumn: return tr("Run median");
    case RatioColumn: return tr("Speed-up");
  }
  return {};
}

Qt::ItemFlags DiffModel::flags(const QModelIndex& index) const {
  auto f = QAbstractTableModel::flags(index);
  const DiffEntry& e = diff_.entries[static_cast<std::size_t>(index.row())];
  if (index.column() == ApplyColumn && e.cls != DiffClass::Same) f |= Qt::ItemIsUserCheckable;
  return f;
}

QVariant DiffModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const DiffEntry& e = diff_.entries[static_cast<std::size_t>(index.row())];
  if (role == Qt::CheckStateRole && index.column() == ApplyColumn)
    return e.cls == DiffClass::Same ? QVariant() : QVariant(checked_.contains(index.row()) ? Qt::Checked : Qt::Unchecked);
  if (role == Qt::ForegroundRole && index.column() == ClassColumn) return classColor(e.cls);
  if (role == Qt::ToolTipRole && e.paired && index.column() >= OldColumn)
    return tr("Re-measured just now: both configs timed side by side in alternation on the run's device.");
  if (role == Qt::ToolTipRole && e.cls == DiffClass::Slower)
    return tr("The registry's entry is faster. Checking this row replaces it anyway, after a confirmation.");
  if (role == Qt::ToolTipRole && e.cls == DiffClass::NotComparable && e.old_entry)
    return tr("Measured %1 in this run, %2 in the registry: the medians do not say which is faster. "
              "Checking this row replaces the entry anyway, after a confirmation.")
        .arg(qstr(e.new_entry.benchmarking_method), qstr(e.old_entry->benchmarking_method));
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case KeyColumn: return qstr(e.family + " " + e.key);
    case ClassColumn: return QString::fromLatin1(to_string(e.cls)) + (e.paired ? tr(" (paired)") : QString());
    case OldConfigColumn: return e.old_entry ? configText(e.old_entry->config) : tr("(none)");
    case NewConfigColumn: return configText(e.new_entry.config);
    case OldColumn: return e.old_entry ? formatNs(e.old_entry->latency_median_ns) : QString();
    case NewColumn: return formatNs(e.new_entry.latency_median_ns);
    case RatioColumn: return e.ratio > 0 ? QStringLiteral("%1×").arg(e.ratio, 0, 'f', 3) : QString();
  }
  return {};
}

bool DiffModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!index.isValid() || index.column() != ApplyColumn || role != Qt::CheckStateRole) return false;
  const DiffEntry& e = diff_.entries[static_cast<std::size_t>(index.row())];
  if (e.cls == DiffClass::Same) return false;
  const bool check = value.value<Qt::CheckState>() == Qt::Checked;
  if (check && needsForce(e.cls) && !(confirm_ && confirm_(e))) return false;
  if (check)
    checked_.insert(index.row());
  else
    checked_.remove(index.row());
  emit dataChanged(index, index, {Qt::CheckStateRole});
  return true;
}

void DiffModel::setDiff(RegistryDiff diff) {
  beginResetModel();
  diff_ = std::move(diff);
  checked_.clear();
  for (std::size_t i = 0; i < diff_.entries.size(); ++i)
    if (diff_.entries[i].cls == DiffClass::New || diff_.entries[i].cls == DiffClass::Faster) checked_.insert(static_cast<int>(i));
  endResetModel();
}

std::vector<std::string> DiffModel::checkedKeys() const {
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < diff_.entries.size(); ++i)
    if (checked_.contains(static_cast<int>(i))) keys.push_back(diff_.entries[i].key);
  return keys;
}

bool DiffModel::forcedAny() const {
  for (int row : checked_)
    if (needsForce(diff_.entries[static_cast<std::size_t>(row)].cls)) return true;
  return false;
}

QString DiffModel::configText(const Config& config) const {
  return trials_ ? trials_->configText(config) : qstr(config.key());
}

DiffPage::DiffPage(RunDocument* document, QWidget* parent) : QWidget(parent), document_(document) {
  model_.setConfigText(document_->trials());
  root_ = new QLineEdit;
  root_->setText(QSettings().value(QStringLiteral("folders/registry"), QDir::current().filePath(QStringLiteral("tuned_data"))).toString());
  auto* browse = new QPushButton(tr("Browse…"));
  auto* compareButton = new QPushButton(tr("Compare"));
  apply_ = new QPushButton(QIcon(QStringLiteral(":/icons/apply.svg")), tr("Apply selected"));
  apply_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return));
  remeasure_ = new QPushButton(tr("Re-measure"));
  remeasure_->setToolTip(tr("Time the registry's config and the run's side by side, in alternation, on the run's device "
                            "now, and class each key from that paired ratio"));
  remeasure_->setEnabled(false);
  job_ = new RemeasureJob(this);
  status_ = new QLabel;
  status_->setWordWrap(true);
  table_ = new QTableView;
  table_->setModel(&model_);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setColumnWidth(DiffModel::ApplyColumn, 60);
  table_->setColumnWidth(DiffModel::KeyColumn, 250);
  table_->setColumnWidth(DiffModel::ClassColumn, 70);
  table_->setColumnWidth(DiffModel::OldConfigColumn, 250);
  table_->setColumnWidth(DiffModel::NewConfigColumn, 250);
  report_ = new QTextBrowser;
  report_->setMaximumHeight(170);

  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(tr("Registry folder:")));
  top->addWidget(root_, 1);
  top->addWidget(browse);
  top->addWidget(compareButton);
  auto* bottom = new QHBoxLayout;
  bottom->addWidget(status_, 1);
  bottom->addWidget(remeasure_);
  bottom->addWidget(apply_);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(table_, 1);
  layout->addLayout(bottom);
  layout->addWidget(report_);

  model_.setConfirmForce([this](const DiffEntry& e) {
    const QString old = e.old_entry ? formatNs(e.old_entry->latency_median_ns) : QString();
    const QString question =
        e.cls == DiffClass::NotComparable
            ? tr("The registry's entry for %1 was measured %2 (%3), this run %4 (%5): the two do not compare.\n\n"
                 "Apply the run's config anyway?")
                  .arg(qstr(e.key), e.old_entry ? qstr(e.old_entry->benchmarking_method) : QString(), old,
                       qstr(e.new_entry.benchmarking_method), formatNs(e.new_entry.latency_median_ns))
            : tr("The registry's entry for %1 is faster (%2 vs %3 in this run).\n\nApply the run's config anyway?")
                  .arg(qstr(e.key), old, formatNs(e.new_entry.latency_median_ns));
    return QMessageBox::warning(this, tr("Replace the registry's entry?"), question, QMessageBox::Yes | QMessageBox::No,
                                QMessageBox::No) == QMessageBox::Yes;
  });
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Registry folder (tuned_data)"), root_->text());
    if (dir.isEmpty()) return;
    setRegistryRoot(dir);
    compare();
  });
  connect(compareButton, &QPushButton::clicked, this, &DiffPage::compare);
  connect(root_, &QLineEdit::returnPressed, this, &DiffPage::compare);
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
  connect(document_, &RunDocument::resultsChanged, this, [this] {
    paired_.clear();  // another run: the verdicts were about the previous one
    compare();
  });
  compare();
}

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
  remeasure_->setEnabled(running || (backends_ && document_->results() && document_->metadata() && busy_.isEmpty() && pairs));
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
  QString text = error.isEmpty() ? tr("Re-measured %1 key(s) in alternation on %2; their classes come from the paired "
                                      "ratio (marked \"paired\").")
                                       .arg(timed)
                                       .arg(qstr(document_->metadata() ? document_->metadata()->device.name : ""))
                                 : tr("Re-measuring stopped: %1. Keys judged before it keep their paired ratio.").arg(error);
  if (paired_.empty() && error.isEmpty()) text = tr("Nothing to re-measure: no key has another config in the registry.");
  if (!notes.isEmpty()) text += tr(" Not timed (the recorded numbers decide): %1").arg(notes.join(QStringLiteral("; ")));
  showMessage(text, !error.isEmpty());
  emit remeasured();
}

bool DiffPage::canApply() const {
  return document_->results() && document_->results()->state == "finished" && !model_.checkedKeys().empty();
}

QString DiffPage::statusText() const { return status_->text(); }

void DiffPage::showMessage(const QString& text, bool error) {
  status_->setText(text);
  status_->setStyleSheet(error ? QStringLiteral("color:#c62828") : QString());
}

bool DiffPage::compare() {
  model_.setDiff({});
  updateButtons();
  if (!document_->results()) {
    showMessage(document_->hasRun() ? tr("This run has no results.json yet (it did not finish): resume it, then compare.")
                                    : tr("Open a finished run (File → Open Run…) or run one to compare it with the registry."),
                false);
    return false;
  }
  try {
    model_.setDiff(diff_run(*document_->results(), sstr(root_->text()), 0.02, paired_));
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
                      .arg(counts[0]).arg(counts[1]).arg(counts[2]).arg(counts[3]).arg(counts[4]) +
                  (finished ? tr("New and faster rows are checked; slower and not comparable ones need a confirmation.")
                            : tr("Its results are partial: resume the run to apply them.")),
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
  ApplyReport report;
  try {
    report = apply_run(*document_->results(), sstr(root_->text()), options);
  } catch (const std::exception& e) {
    showMessage(tr("Nothing was written: %1").arg(QString::fromUtf8(e.what())), true);
    return std::nullopt;
  }
  QString html = tr("<b>Wrote %1 entr%2 to %3</b>").arg(report.written.size()).arg(report.written.size() == 1 ? "y" : "ies")
                     .arg(qstr(report.registry_file.string()).toHtmlEscaped());
  if (!report.backup_file.empty()) html += tr("<br>previous file kept as %1").arg(qstr(report.backup_file.string()).toHtmlEscaped());
  html += QStringLiteral("<ul>");
  for (const DiffEntry& e : report.written)
    html += QStringLiteral("<li>%1: %2 (%3)</li>").arg(qstr(e.key).toHtmlEscaped(), model_.configText(e.new_entry.config).toHtmlEscaped(),
                                                        formatNs(e.new_entry.latency_median_ns));
  for (std::size_t i = 0; i < report.skipped.size(); ++i)
    html += tr("<li style='color:#757575'>skipped %1: %2</li>").arg(qstr(report.skipped[i].key).toHtmlEscaped(),
                                                                    qstr(report.skip_reasons[i]).toHtmlEscaped());
  html += QStringLiteral("</ul>");
  compare();
  report_->setHtml(html);
  emit applied(report);
  return report;
}

}  // namespace ktune::gui
