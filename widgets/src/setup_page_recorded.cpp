// The Setup page showing a run as it was made: a session read from a run folder (File → Open Run,
// --open) brings back the run's family, backend, device, worker command, spec, space, shapes and
// measurement settings, also where this build or machine cannot make the run again.
#include <QComboBox>
#include <QLabel>
#include <filesystem>

#include "ktune/error.h"
#include "ktune/family_description.h"
#include "ktune/recorded_setup.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/setup_page.h"
#include "ktune/widgets/worker_panel.h"

namespace ktune::gui {

namespace {

QString code(const std::string& text) { return QStringLiteral("<code>%1</code>").arg(qstr(text).toHtmlEscaped()); }

// The command line as a person would type it again: the program by its name, arguments with
// blanks quoted.
std::string commandLine(const std::vector<std::string>& arguments) {
  std::string out;
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    std::string a = i == 0 ? std::filesystem::path(arguments[i]).filename().string() : arguments[i];
    if (a.empty() || a.find_first_of(" \t'\"$\\") != std::string::npos) {
      std::string quoted = "'";
      for (const char c : a) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
      a = quoted + "'";
    }
    out += (out.empty() ? "" : " ") + a;
  }
  return out;
}

bool hasDevice(Backend& backend, int index) {
  for (const DeviceInfo& d : backend.devices())
    if (d.index == index) return true;
  return false;
}

// Why Start cannot tune the run on this build and machine; empty when it can (as far as the
// backend, family and device go).
std::string whyNotTunable(const RunMetadata& m, const RecordedSetup& setup,
                          const std::vector<std::unique_ptr<Backend>>& backends) {
  const std::string run = "run " + m.run_name;
  if (setup.origin == RunOrigin::Import)
    return run + " is an imported Kernel Tuner cache: ktune has no kernel for '" + m.family +
           "' to tune; File → Replay a Recorded Run… searches its recorded configs";
  if (setup.origin == RunOrigin::Replay)
    return run + " is a replay of " +
           (setup.source.empty() ? std::string("a recorded run") : setup.resolve(setup.source)) +
           ", which no device measured: File → Replay a Recorded Run… replays that run again";
  Backend* backend = built_in_backend(backends, m.backend);
  if (!backend)
    return run + " was measured on the '" + m.backend +
           "' backend, which this build lacks (it has: " + backend_names(backends) +
           "); tune it where ktune has that backend";
  if (!built_in_family(backends, m.backend, m.family))
    return setup.kernel_spec.empty()
               ? "the " + m.backend + " backend of this build has no family '" + m.family + "'"
               : run + " tuned '" + m.family + "' from the kernel spec " + setup.resolve(setup.kernel_spec) +
                     ", which the workbench does not load: tune it with ktune tune --kernel-spec " +
                     setup.resolve(setup.kernel_spec);
  if (!hasDevice(*backend, m.device.index)) {
    const std::string why = backend->unavailable_reason();
    return run + " was made on " + m.device.name + " (" + m.backend + " device " + std::to_string(m.device.index) +
           "), which this machine does not have" + (why.empty() ? "" : " (" + why + ")") +
           "; open the run where that device is, or pick a backend of this machine";
  }
  return {};
}

QString madeBy(const RunMetadata& m, const RecordedSetup& setup) {
  switch (setup.origin) {
    case RunOrigin::Import:
      return SetupPage::tr("imported from the Kernel Tuner cache %1 (measured on %2)")
          .arg(code(setup.resolve(setup.source)), qstr(m.device.name).toHtmlEscaped());
    case RunOrigin::Replay:
      return SetupPage::tr("a replay of %1 by strategy %2 (recorded answers, no device)")
          .arg(code(setup.resolve(setup.source)), qstr(m.strategy.kind));
    case RunOrigin::Merge:
      return SetupPage::tr("merged from %1 by %2")
          .arg(setup.shards == 1 ? SetupPage::tr("1 shard") : SetupPage::tr("%1 shards").arg(setup.shards),
               code(commandLine(m.arguments)));
    case RunOrigin::Workbench:
      return SetupPage::tr("made in the workbench on %1").arg(qstr(m.device.name).toHtmlEscaped());
    case RunOrigin::Tune:
      break;
  }
  return SetupPage::tr("made by %1 on %2").arg(code(commandLine(m.arguments)), qstr(m.device.name).toHtmlEscaped());
}

}  // namespace

QString SetupPage::originText() const { return origin_->text(); }

bool SetupPage::isRecordedEntry() const {
  return !recordedWhy_.isEmpty() && backendCombo_->currentIndex() == static_cast<int>(backends_.size()) + 1;
}

bool SetupPage::showsRecordedRun() const { return isRecordedEntry(); }

Backend* SetupPage::listedBackend() const {
  if (Backend* backend = currentBackend()) return backend;
  const bool workerRun = recorded_ && !recorded_->worker.empty();
  return isExternalWorker() && workerRun ? recordedBackend_.get() : nullptr;
}

void SetupPage::clearRecorded() {
  if (!recordedWhy_.isEmpty()) {
    QSignalBlocker block(backendCombo_);
    backendCombo_->removeItem(static_cast<int>(backends_.size()) + 1);
  }
  recorded_.reset();
  recordedWhy_.clear();
  origin_->clear();
  origin_->hide();
  // The combo no longer lists the record; the page must not keep showing it either.
  if (recordedBackend_ && listedBackend() != recordedBackend_.get()) onBackendChanged();
  recordedBackend_.reset();
}

void SetupPage::reapplyRecorded() {
  if (!recorded_ || !recordedBackend_ || listedBackend() != recordedBackend_.get()) return;
  try {
    applySession(*recorded_);
  } catch (const InputError& e) {
    setShapeMessage(QString::fromUtf8(e.what()));
  }
}

void SetupPage::setRecordedSession(const Session& s, WorkerStart start, const QString& origin) {
  const RunMetadata& m = s.recorded->metadata;
  const RecordedSetup setup = recorded_setup(m, backends_);
  clearRecorded();
  pendingSession_.reset();  // an earlier worker session's: this run replaces it
  recorded_ = s;
  const std::string why = s.worker.empty() ? whyNotTunable(m, setup, backends_) : std::string();
  recordedWhy_ = qstr(why);
  // Nothing was isolated where nothing was measured; else what the run said, or the default.
  const bool measured = setup.origin != RunOrigin::Import && setup.origin != RunOrigin::Replay;
  recordedIsolate_ = measured && setup.isolate.value_or(m.backend != "cpu");
  const bool live = s.worker.empty() && why.empty();
  if (!live)
    recordedBackend_ = recorded_backend(
        m, setup, why.empty() ? "the worker `" + s.worker + "` is not connected: press Connect under Device" : why);

  QStringList lines{
      tr("<b>Run %1</b> (%2), %3.").arg(qstr(m.run_name).toHtmlEscaped(), qstr(m.state), madeBy(m, setup))};
  if (!s.worker.empty())
    lines << (s.worker_directory.empty()
                  ? tr("Measured by the worker %1, shown as recorded until you press Connect under Device.")
                        .arg(code(s.worker))
                  : tr("Measured by the worker %1 in %2, shown as recorded until you press Connect under Device.")
                        .arg(code(s.worker), code(s.worker_directory)));
  if (!setup.kernel_spec.empty()) lines << tr("Kernel spec %1.").arg(code(setup.resolve(setup.kernel_spec)));
  if (!why.empty()) lines << tr("Start cannot tune it here: %1.").arg(qstr(why).toHtmlEscaped());
  for (const std::string& unknown : setup.unknown) lines << tr("Not recorded: %1.").arg(qstr(unknown).toHtmlEscaped());

  if (!s.worker.empty()) {
    {
      QSignalBlocker block(backendCombo_);
      backendCombo_->setCurrentIndex(static_cast<int>(backends_.size()));
    }
    if (start == WorkerStart::Now)
      workerPanel_->setCommand(qstr(s.worker), qstr(s.worker_directory));
    else
      workerPanel_->setCommandFromFile(qstr(s.worker), origin.isEmpty() ? tr("the run folder") : origin,
                                       qstr(s.worker_directory));
  } else if (live) {
    QSignalBlocker block(backendCombo_);
    backendCombo_->setCurrentIndex(backendCombo_->findText(qstr(s.backend)));
  } else {
    QSignalBlocker block(backendCombo_);
    backendCombo_->addItem(tr("%1, as run %2 recorded it").arg(qstr(m.backend), qstr(m.run_name)));
    backendCombo_->setItemData(backendCombo_->count() - 1, recordedWhy_, Qt::ToolTipRole);
    backendCombo_->setCurrentIndex(backendCombo_->count() - 1);
  }
  onBackendChanged();
  try {
    applySession(s);
  } catch (const InputError& e) {
    lines << tr("Its setup does not apply here: %1").arg(QString::fromUtf8(e.what()).toHtmlEscaped());
  }
  if (live && currentDevice().name != m.device.name)
    lines << tr("Recorded on %1; this machine's %2 is selected.")
                 .arg(qstr(m.device.name).toHtmlEscaped(), qstr(currentDevice().name).toHtmlEscaped());
  origin_->setText(lines.join(QStringLiteral("<br>")));
  origin_->show();
  if (!s.worker.empty()) {
    pendingSession_ = s;
    if (start != WorkerStart::Never) workerPanel_->connectWorker();
  }
}

}  // namespace ktune::gui
