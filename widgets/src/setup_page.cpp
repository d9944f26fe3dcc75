#include "ktune/widgets/setup_page.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>

#include "ktune/error.h"
#include "ktune/run_options.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/shapes_model.h"
#include "ktune/widgets/space_editor.h"
#include "ktune/widgets/worker_panel.h"

namespace ktune::gui {

namespace {

QString formatProperty(const std::string& name, double value) {
  const QString n = qstr(name);
  if (n.endsWith(QLatin1String("_bytes")) || n.startsWith(QLatin1String("smem"))) {
    if (value >= 1 << 20) return QStringLiteral("%1 MiB").arg(value / (1 << 20), 0, 'g', 4);
    if (value >= 1 << 10) return QStringLiteral("%1 KiB").arg(value / (1 << 10), 0, 'g', 4);
    return QStringLiteral("%1 B").arg(value);
  }
  if (n.startsWith(QLatin1String("peak_gflops"))) return QStringLiteral("%1 TFLOP/s").arg(value / 1e3, 0, 'g', 4);
  if (n.endsWith(QLatin1String("_gbs"))) return QStringLiteral("%1 GB/s").arg(value, 0, 'g', 5);
  if (n.endsWith(QLatin1String("_mhz"))) return QStringLiteral("%1 MHz").arg(value, 0, 'f', 0);
  return QString::number(value, 'g', 10);
}

QGroupBox* group(const QString& title, QLayout* layout) {
  auto* box = new QGroupBox(title);
  box->setLayout(layout);
  return box;
}

// A spin box for a run option accepts what the core accepts (run_options.h), in the box's unit,
// so a valid session value is never clamped on its way in.
template <class S>
QDoubleSpinBox* optionSpinBox(std::span<const Option<S>> options, const char* key, double scale = 1) {
  const Range r = find_option(options, key).range;
  auto* box = new QDoubleSpinBox;
  box->setRange(r.min * scale, r.max * scale);
  return box;
}
template <class S>
QSpinBox* optionIntSpinBox(std::span<const Option<S>> options, const char* key) {
  const Range r = find_option(options, key).range;
  auto* box = new QSpinBox;
  box->setRange(static_cast<int>(r.min), static_cast<int>(std::min<double>(r.max, INT_MAX)));
  return box;
}

}  // namespace

SetupPage::SetupPage(std::vector<std::unique_ptr<Backend>>& backends, QWidget* parent)
    : QWidget(parent), backends_(backends), shapes_(std::make_unique<ShapesModel>()) {
  familyCombo_ = new QComboBox;
  familyLabel_ = new QLabel;
  familyLabel_->setWordWrap(true);
  auto* familyForm = new QFormLayout;
  familyForm->addRow(tr("Family"), familyCombo_);
  familyForm->addRow(familyLabel_);

  QLayout* deviceForm = makeDeviceForm();
  QLayout* shapesLayout = makeShapesLayout();
  QLayout* spaceLayout = makeSpaceLayout();
  QLayout* strategyForm = makeStrategyForm();
  QLayout* measureForm = makeMeasureForm();
  QLayout* runForm = makeRunForm();

  auto* left = new QVBoxLayout;
  left->addWidget(group(tr("Device"), deviceForm), 3);
  left->addWidget(group(tr("Kernel"), familyForm));
  left->addWidget(group(tr("Problem shapes"), shapesLayout), 2);
  auto* settings = new QHBoxLayout;
  auto* settingsLeft = new QVBoxLayout;
  settingsLeft->addWidget(group(tr("Strategy"), strategyForm));
  settingsLeft->addWidget(group(tr("Run"), runForm));
  settingsLeft->addStretch();
  settings->addLayout(settingsLeft);
  settings->addWidget(group(tr("Measurement"), measureForm));
  auto* right = new QVBoxLayout;
  right->addWidget(group(tr("Search space"), spaceLayout), 1);
  right->addLayout(settings);
  origin_ = new QLabel;
  origin_->setObjectName(QStringLiteral("runOrigin"));
  origin_->setWordWrap(true);
  origin_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  origin_->setStyleSheet(QStringLiteral("QLabel { background: #fff8e1; border: 1px solid #ffe082; padding: 4px; }"));
  origin_->hide();
  auto* columns = new QHBoxLayout;
  columns->addLayout(left, 2);
  columns->addLayout(right, 3);
  auto* page = new QVBoxLayout(this);
  page->addWidget(origin_);
  page->addLayout(columns, 1);

  connect(familyCombo_, &QComboBox::currentIndexChanged, this, &SetupPage::onFamilyChanged);

  fillBackends();
  Session defaults;
  noiseTarget_->setValue(defaults.measure.noise_target * 100);
  minSamples_->setValue(defaults.measure.min_samples);
  maxSamples_->setValue(defaults.measure.max_samples);
  warmupMs_->setValue(defaults.measure.warmup_ms);
  settleMs_->setValue(defaults.measure.settle_ms);
  maxMsPerConfig_->setValue(defaults.measure.max_ms_per_config);
  slowAbort_->setChecked(defaults.measure.slow_abort);
  outputDir_->setText(qstr(defaults.output_dir));
}

SetupPage::~SetupPage() = default;

// Backend, worker, device and its properties, Isolate.
QLayout* SetupPage::makeDeviceForm() {
  backendCombo_ = new QComboBox;
  backendCombo_->setObjectName(QStringLiteral("backend"));
  deviceCombo_ = new QComboBox;
  deviceTable_ = new QTableWidget(0, 2);
  deviceTable_->setHorizontalHeaderLabels({tr("Property"), tr("Value")});
  deviceTable_->horizontalHeader()->setStretchLastSection(true);
  deviceTable_->verticalHeader()->hide();
  deviceTable_->verticalHeader()->setDefaultSectionSize(22);
  deviceTable_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  deviceTable_->setColumnWidth(0, 170);
  workerPanel_ = new WorkerPanel;
  isolate_ = new QCheckBox(tr("Isolate: measure in a worker process"));
  isolate_->setObjectName(QStringLiteral("isolate"));
  isolate_->setToolTip(
      tr("A config that crashes, faults or hangs kills only the worker process: it is recorded "
         "crashed or timeout, the worker starts again and the run goes on (ktune tune --isolate). "
         "On by default for GPU backends."));
  auto* deviceForm = new QFormLayout;
  deviceForm->addRow(tr("Backend"), backendCombo_);
  deviceForm->addRow(tr("Worker"), workerPanel_);
  deviceForm->addRow(tr("Device"), deviceCombo_);
  deviceForm->addRow(deviceTable_);
  deviceForm->addRow(isolate_);

  connect(backendCombo_, &QComboBox::currentIndexChanged, this, [this] {
    pendingSession_.reset();
    onBackendChanged();
    reapplyRecorded();  // back on a reopened run's own entry: its setup again
  });
  connect(workerPanel_, &WorkerPanel::connected, this, &SetupPage::onWorkerConnected);
  connect(workerPanel_, &WorkerPanel::failed, this, [this] {
    pendingSession_.reset();
    if (!isExternalWorker()) return;
    onBackendChanged();  // the last worker's offer is gone
    reapplyRecorded();   // a reopened worker run shows as recorded until a worker connects
  });
  connect(deviceCombo_, &QComboBox::currentIndexChanged, this, &SetupPage::onDeviceChanged);
  return deviceForm;
}

QLayout* SetupPage::makeShapesLayout() {
  shapeEdit_ = new QLineEdit;
  shapeEdit_->setPlaceholderText(tr("M=1,16,64 N=4096 K=4096"));
  shapeEdit_->setToolTip(
      tr("One shape per entry; comma lists expand into one row per value. "
         "Fields left out take the family's defaults."));
  tpSize_ = new QSpinBox;
  tpSize_->setRange(1, 1024);
  tpSize_->setPrefix(tr("tp "));
  tpSplit_ = new QComboBox;  // the family's own splits (onFamilyChanged)
  tpSplit_->setToolTip(tr("How --tp-size shards the shapes: the fields each split divides"));
  auto* addShape = new QPushButton(QIcon(QStringLiteral(":/icons/add.svg")), tr("Add"));
  auto* pasteShapes = new QPushButton(tr("Paste list…"));
  auto* removeShape = new QPushButton(QIcon(QStringLiteral(":/icons/remove.svg")), tr("Remove"));
  shapesView_ = new QTableView;
  shapesView_->setModel(shapes_.get());
  shapesView_->horizontalHeader()->setStretchLastSection(true);
  shapesView_->verticalHeader()->setDefaultSectionSize(22);
  shapesView_->setSelectionBehavior(QAbstractItemView::SelectRows);
  shapeMessage_ = new QLabel;
  shapeMessage_->setWordWrap(true);
  shapeMessage_->setStyleSheet(QStringLiteral("color:#c62828"));
  shapeMessage_->hide();
  auto* shapeRow = new QHBoxLayout;
  shapeRow->addWidget(shapeEdit_, 1);
  shapeRow->addWidget(tpSize_);
  shapeRow->addWidget(tpSplit_);
  shapeRow->addWidget(addShape);
  auto* shapeButtons = new QHBoxLayout;
  shapeButtons->addWidget(pasteShapes);
  shapeButtons->addWidget(removeShape);
  shapeButtons->addStretch();
  auto* shapesLayout = new QVBoxLayout;
  shapesLayout->addLayout(shapeRow);
  shapesLayout->addWidget(shapesView_, 1);
  shapesLayout->addWidget(shapeMessage_);
  shapesLayout->addLayout(shapeButtons);

  connect(shapes_.get(), &ShapesModel::problemsChanged, this, &SetupPage::updateContexts);
  connect(shapes_.get(), &ShapesModel::editRejected, this, &SetupPage::setShapeMessage);
  connect(addShape, &QPushButton::clicked, this, [this] {
    if (addShapes(shapeEdit_->text())) shapeEdit_->clear();
  });
  connect(shapeEdit_, &QLineEdit::returnPressed, addShape, &QPushButton::click);
  connect(pasteShapes, &QPushButton::clicked, this, [this] {
    bool ok = false;
    const QString text = QInputDialog::getMultiLineText(
        this, tr("Paste shapes"), tr("One shape per line, e.g. M=1,16,64 N=4096 K=4096:"), {}, &ok);
    if (ok) addShapes(text);
  });
  connect(removeShape, &QPushButton::clicked, this, [this] {
    const QModelIndexList rows = shapesView_->selectionModel()->selectedRows();
    for (auto it = rows.rbegin(); it != rows.rend(); ++it) shapes_->removeRows(it->row(), 1);
  });
  return shapesLayout;
}

QLayout* SetupPage::makeSpaceLayout() {
  space_ = new SpaceEditor;
  auto* resetSpace = new QPushButton(tr("Family default"));
  auto* loadSpace = new QPushButton(tr("Load…"));
  auto* saveSpace = new QPushButton(tr("Save…"));
  auto* spaceButtons = new QHBoxLayout;
  spaceButtons->addWidget(resetSpace);
  spaceButtons->addWidget(loadSpace);
  spaceButtons->addWidget(saveSpace);
  spaceButtons->addStretch();
  auto* spaceLayout = new QVBoxLayout;
  spaceLayout->addWidget(space_, 1);
  spaceLayout->addLayout(spaceButtons);

  connect(resetSpace, &QPushButton::clicked, this, [this] { space_->setSpace(currentFamily().default_space); });
  connect(loadSpace, &QPushButton::clicked, this, [this] {
    const QString file = QFileDialog::getOpenFileName(this, tr("Load search space"), {}, tr("JSON (*.json)"));
    if (file.isEmpty()) return;
    try {
      space_->setSpace(SearchSpace::load(sstr(file)));
    } catch (const InputError& e) {
      setShapeMessage(QString::fromUtf8(e.what()));
    }
  });
  connect(saveSpace, &QPushButton::clicked, this, [this] {
    const QString file = QFileDialog::getSaveFileName(this, tr("Save search space"), {}, tr("JSON (*.json)"));
    if (file.isEmpty()) return;
    try {
      space_->space().save(sstr(file));
    } catch (const std::exception& e) {
      setShapeMessage(QString::fromUtf8(e.what()));
    }
  });
  return spaceLayout;
}

QLayout* SetupPage::makeStrategyForm() {
  strategyCombo_ = new QComboBox;
  for (const std::string& name : strategy_names()) strategyCombo_->addItem(qstr(name));
  budget_ = optionIntSpinBox(strategy_options(), "budget");
  budget_->setSpecialValueText(tr("all configs"));
  budget_->setSuffix(tr(" per shape"));
  strategySeed_ = new QSpinBox;
  strategySeed_->setRange(0, INT_MAX);
  strategySeed_->setToolTip(QString::fromUtf8(find_option(strategy_options(), "seed").doc));
  auto* strategyForm = new QFormLayout;
  strategyForm->addRow(tr("Strategy"), strategyCombo_);
  strategyForm->addRow(tr("Budget"), budget_);
  strategyForm->addRow(tr("Strategy seed"), strategySeed_);

  return strategyForm;
}

// Widgets of measure options take their range and tooltip from the option table (run_options.h).
QLayout* SetupPage::makeMeasureForm() {
  method_ = new QComboBox;
  method_->addItem(tr("amortized (warm, throughput)"), QStringLiteral("amortized"));
  method_->addItem(tr("per launch (cold, latency)"), QStringLiteral("per_launch"));
  noiseTarget_ = optionSpinBox(measure_options(), "noise_target", 100);
  noiseTarget_->setSuffix(QStringLiteral(" %"));
  noiseTarget_->setDecimals(4);
  minSamples_ = optionIntSpinBox(measure_options(), "min_samples");
  maxSamples_ = optionIntSpinBox(measure_options(), "max_samples");
  warmupMs_ = optionSpinBox(measure_options(), "warmup_ms");
  warmupMs_->setSuffix(QStringLiteral(" ms"));
  settleMs_ = optionSpinBox(measure_options(), "settle_ms");
  settleMs_->setSuffix(QStringLiteral(" ms"));
  maxMsPerConfig_ = optionSpinBox(measure_options(), "max_ms_per_config");
  maxMsPerConfig_->setSuffix(QStringLiteral(" ms"));
  slowAbort_ = new QCheckBox(tr("stop configs that cannot beat the best"));
  rotateBuffers_ = new QCheckBox(tr("rotate input buffers (cold cache, amortized)"));
  seed_ = new QSpinBox;
  seed_->setRange(0, INT_MAX);
  seed_->setToolTip(QString::fromUtf8(workload_seed_option().doc));
  auto* samples = new QHBoxLayout;
  samples->addWidget(minSamples_);
  samples->addWidget(new QLabel(tr("to")));
  samples->addWidget(maxSamples_);
  auto* measureForm = new QFormLayout;
  measureForm->addRow(tr("Method"), method_);
  measureForm->addRow(tr("Noise target"), noiseTarget_);
  measureForm->addRow(tr("Samples"), samples);
  measureForm->addRow(tr("Warm-up"), warmupMs_);
  measureForm->addRow(tr("Warm-up after idle"), settleMs_);
  measureForm->addRow(tr("Time cap per config"), maxMsPerConfig_);
  measureForm->addRow(slowAbort_);
  measureForm->addRow(rotateBuffers_);
  measureForm->addRow(tr("Workload seed"), seed_);

  return measureForm;
}

// Run name, runs folder, and the session buttons.
QLayout* SetupPage::makeRunForm() {
  runName_ = new QLineEdit;
  runName_->setPlaceholderText(tr("default: <family>_<date>_<time>"));
  outputDir_ = new QLineEdit;
  auto* browse = new QPushButton(tr("Browse…"));
  auto* folderRow = new QHBoxLayout;
  folderRow->addWidget(outputDir_, 1);
  folderRow->addWidget(browse);
  auto* loadSession = new QPushButton(QIcon(QStringLiteral(":/icons/open.svg")), tr("Load session…"));
  auto* saveSession = new QPushButton(QIcon(QStringLiteral(":/icons/save.svg")), tr("Save session…"));
  auto* sessionRow = new QHBoxLayout;
  sessionRow->addWidget(loadSession);
  sessionRow->addWidget(saveSession);
  auto* runForm = new QFormLayout;
  runForm->addRow(tr("Run name"), runName_);
  runForm->addRow(tr("Runs folder"), folderRow);
  runForm->addRow(sessionRow);

  connect(browse, &QPushButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Runs folder"), outputDir_->text());
    if (!dir.isEmpty()) outputDir_->setText(dir);
  });
  connect(loadSession, &QPushButton::clicked, this, [this] {
    const QString file = QFileDialog::getOpenFileName(this, tr("Load session"), {}, tr("ktune session (*.json)"));
    if (file.isEmpty()) return;
    try {
      loadSessionFrom(file);
    } catch (const InputError& e) {
      setShapeMessage(QString::fromUtf8(e.what()));
    }
  });
  connect(saveSession, &QPushButton::clicked, this, [this] {
    const QString file = QFileDialog::getSaveFileName(this, tr("Save session"), QStringLiteral("session.json"),
                                                      tr("ktune session (*.json)"));
    if (file.isEmpty()) return;
    try {
      saveSessionTo(file);
    } catch (const std::exception& e) {
      setShapeMessage(QString::fromUtf8(e.what()));
    }
  });

  return runForm;
}

void SetupPage::fillBackends() {
  QSignalBlocker block(backendCombo_);
  backendCombo_->clear();
  for (const auto& backend : backends_) backendCombo_->addItem(qstr(backend->name()));
  backendCombo_->addItem(tr("external worker…"));
  backendCombo_->setItemData(backendCombo_->count() - 1,
                             tr("Any program that speaks the worker protocol: a Python worker for Triton or numpy "
                                "kernels, or `ssh host ktune worker --backend cuda` for a remote GPU"),
                             Qt::ToolTipRole);
  onBackendChanged();
}

bool SetupPage::isExternalWorker() const { return backendCombo_->currentIndex() == static_cast<int>(backends_.size()); }

Backend* SetupPage::currentBackend() const {
  const int i = backendCombo_->currentIndex();
  if (i < 0) return nullptr;
  if (isExternalWorker()) return workerPanel_->backend().get();
  if (isRecordedEntry()) return recordedBackend_.get();
  return backends_[static_cast<std::size_t>(i)].get();
}

void SetupPage::setWorkerProgram(const QStringList& argv) {
  workerProgram_ = argv;
  onBackendChanged();
}

bool SetupPage::isolates() const { return isolate_->isEnabled() && isolate_->isChecked(); }

void SetupPage::onWorkerConnected() {
  if (!isExternalWorker()) return;
  onBackendChanged();
  std::optional<Session> s = std::exchange(pendingSession_, std::nullopt);
  // A reopened worker run's worker, connected again after a failed try: the run's setup again.
  if (!s && recorded_ && !recorded_->worker.empty() && workerPanel_->command() == qstr(recorded_->worker))
    s = recorded_;
  if (!s) return;
  try {
    applySession(*s);
  } catch (const InputError& e) {
    setShapeMessage(QString::fromUtf8(e.what()));
  }
}

DeviceInfo SetupPage::currentDevice() const {
  const int i = deviceCombo_->currentIndex();
  if (i < 0)
    throw InputError("no device selected: the " + sstr(backendCombo_->currentText()) +
                     " backend found none on this machine; pick another backend");
  return devices_[static_cast<std::size_t>(i)];
}

KernelFamily SetupPage::currentFamily() const {
  const int i = familyCombo_->currentIndex();
  if (i < 0) throw InputError("no kernel family selected: pick one under Kernel");
  return families_[static_cast<std::size_t>(i)];
}

void SetupPage::onBackendChanged() {
  Backend* backend = listedBackend();
  const bool external = isExternalWorker();
  workerPanel_->setVisible(external);
  if (QWidget* box = workerPanel_->parentWidget())
    if (auto* form = qobject_cast<QFormLayout*>(box->layout())) form->setRowVisible(workerPanel_, external);
  // An external worker always measures in its own process; a built-in backend may, where a
  // worker program is known, and does by default on GPUs as `ktune tune` does. A run's record
  // shows what the run did.
  const bool record = isRecordedEntry();
  isolate_->setEnabled(!external && !record && !workerProgram_.isEmpty());
  isolate_->setChecked(record ? recordedIsolate_
                              : external || (backend && backend->name() != "cpu" && !workerProgram_.isEmpty()));
  devices_ = backend ? backend->devices() : std::vector<DeviceInfo>{};
  families_ = backend ? backend->families() : std::vector<KernelFamily>{};
  {
    QSignalBlocker block(deviceCombo_);
    deviceCombo_->clear();
    for (const DeviceInfo& d : devices_) deviceCombo_->addItem(QStringLiteral("%1: %2").arg(d.index).arg(qstr(d.name)));
  }
  {
    QSignalBlocker block(familyCombo_);
    familyCombo_->clear();
    for (const KernelFamily& f : families_) familyCombo_->addItem(qstr(f.name));
  }
  onDeviceChanged();
  onFamilyChanged();
}

void SetupPage::onDeviceChanged() {
  const int i = deviceCombo_->currentIndex();
  showDeviceProperties(i < 0 ? DeviceInfo{} : devices_[static_cast<std::size_t>(i)]);
  updateContexts();
}

void SetupPage::showDeviceProperties(const DeviceInfo& device) {
  deviceTable_->setRowCount(0);
  const auto addRow = [this](const QString& name, const QString& value) {
    const int row = deviceTable_->rowCount();
    deviceTable_->insertRow(row);
    deviceTable_->setItem(row, 0, new QTableWidgetItem(name));
    deviceTable_->setItem(row, 1, new QTableWidgetItem(value));
    deviceTable_->item(row, 1)->setToolTip(value);
  };
  if (device.name.empty()) {
    addRow(tr("(no device)"), tr("this backend found no device on this machine"));
    return;
  }
  addRow(tr("name"), qstr(device.name));
  for (const auto& [name, value] : device.properties) addRow(qstr(name), formatProperty(name, value));
  for (const auto& [name, value] : device.text) addRow(qstr(name), qstr(value));
}

void SetupPage::setTpSplits(const KernelFamily& family) {
  const QString previous = tpSplit_->currentData().toString();
  tpSplit_->clear();
  tpSplit_->addItem(tr("no split"), QStringLiteral("none"));
  for (const TpSplit& split : family.tp_splits) {
    QStringList fields;
    for (const TpField& f : split.fields) fields << qstr(f.name) + (f.at_least_one ? tr(" (≥ 1)") : QString());
    const QString dim = qstr(to_string(split.dim));
    const QString kind = split.dim == TpSplitDim::Out  ? tr(", column parallel")
                         : split.dim == TpSplitDim::In ? tr(", row parallel")
                                                       : QString();
    tpSplit_->addItem(tr("split %1 (%2%3)").arg(dim, fields.join(QStringLiteral(", ")), kind), dim);
  }
  tpSplit_->setCurrentIndex(std::max(0, tpSplit_->findData(previous)));
  tpSplit_->setEnabled(!family.tp_splits.empty());
  tpSize_->setEnabled(!family.tp_splits.empty());
}

void SetupPage::onFamilyChanged() {
  const int i = familyCombo_->currentIndex();
  if (i < 0) {
    // No family (an external worker not connected yet): nothing of the last one's stays.
    familyLabel_->clear();
    space_->setSpace({});
    updateContexts();
    return;
  }
  const KernelFamily& family = families_[static_cast<std::size_t>(i)];
  QStringList fields;
  for (const KeyField& f : family.key_fields)
    fields << (f.default_value.empty() ? qstr(f.name)
                                       : QStringLiteral("%1 (default %2)").arg(qstr(f.name), qstr(f.default_value)));
  familyLabel_->setText(QStringLiteral("%1<br><small>key: %2</small>")
                            .arg(qstr(family.description).toHtmlEscaped(), fields.join(QStringLiteral(", "))));
  shapes_->setFamily(family);
  setTpSplits(family);
  space_->setSpace(family.default_space);
  for (int c = 0; c < shapes_->columnCount(); ++c) shapesView_->setColumnWidth(c, 70);
  updateContexts();
}

void SetupPage::updateContexts() {
  std::vector<Variables> contexts;
  if (deviceCombo_->currentIndex() >= 0 && familyCombo_->currentIndex() >= 0) {
    const DeviceInfo device = currentDevice();
    const KernelFamily family = currentFamily();
    for (const Problem& p : shapes_->problems()) {
      Variables vars = device.variables();
      try {
        for (const auto& [k, v] : family.variables(p)) vars[k] = v;
      } catch (const InputError&) {
        continue;  // another family's shape, until the family's own replace it (onFamilyChanged)
      }
      contexts.push_back(std::move(vars));
    }
  }
  space_->setContexts(std::move(contexts));
}

void SetupPage::setShapeMessage(const QString& message) {
  shapeMessage_->setText(message);
  shapeMessage_->setVisible(!message.isEmpty());
}

bool SetupPage::addShapes(const QString& text) {
  try {
    const QString dim = tpSplit_->currentData().toString();
    const auto split = tp_split_dim_from_string(dim.isEmpty() ? "none" : sstr(dim));
    const int added = shapes_->addShapes(text, tpSize_->value(), split);
    setShapeMessage(added ? QString() : tr("No new shape: type one like M=1,16,64 N=4096 K=4096."));
    return added > 0;
  } catch (const InputError& e) {
    setShapeMessage(QString::fromUtf8(e.what()));
    return false;
  }
}

}  // namespace ktune::gui
