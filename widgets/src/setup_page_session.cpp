// The Setup page as a session (saved, loaded, reopened from a run) and as the request and
// target a run starts from.
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLineEdit>
#include <QSpinBox>
#include <filesystem>

#include "ktune/error.h"
#include "ktune/run_options.h"
#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/setup_page.h"
#include "ktune/widgets/shapes_model.h"
#include "ktune/widgets/space_editor.h"
#include "ktune/widgets/worker_panel.h"

namespace ktune::gui {

namespace {

// `space` with the family's launch limits it lacks (KernelFamily::user_space); a space that is not
// the family's (a parameter missing or unknown) is an InputError saying which.
SearchSpace withLaunchLimits(const KernelFamily& family, const SearchSpace& space) {
  return family.launch_limits.empty() ? space : family.user_space(space);
}

}  // namespace

Session SetupPage::session() const {
  Session s;
  const Backend* backend = currentBackend();
  s.backend = backend ? backend->name() : sstr(backendCombo_->currentText());
  if (isExternalWorker()) {
    s.worker = sstr(workerPanel_->command());
    s.worker_directory = sstr(workerPanel_->otherFolder());
  } else {
    s.isolate = isolate_->isChecked();
  }
  s.device =
      deviceCombo_->currentIndex() < 0 ? 0 : devices_[static_cast<std::size_t>(deviceCombo_->currentIndex())].index;
  s.family = sstr(familyCombo_->currentText());
  s.problems = shapes_->problems();
  s.space = space_->space();
  s.strategy = strategy_;
  s.measure = measure_;
  s.tolerance = tolerance_;
  s.strategy.kind = sstr(strategyCombo_->currentText());
  s.strategy.budget = static_cast<std::size_t>(budget_->value());
  s.strategy.seed = static_cast<std::uint64_t>(strategySeed_->value());
  s.measure.method = method_from_string(sstr(method_->currentData().toString()));
  s.measure.noise_target = noiseTarget_->value() / 100.0;
  s.measure.min_samples = minSamples_->value();
  s.measure.max_samples = maxSamples_->value();
  s.measure.warmup_ms = warmupMs_->value();
  s.measure.settle_ms = settleMs_->value();
  s.measure.max_ms_per_config = maxMsPerConfig_->value();
  s.measure.slow_abort = slowAbort_->isChecked();
  s.measure.rotate_buffers = rotateBuffers_->isChecked();
  s.seed = static_cast<std::uint64_t>(seed_->value());
  s.run_name = sstr(runName_->text().trimmed());
  s.output_dir = sstr(outputDir_->text().trimmed());
  return s;
}

void SetupPage::setSession(const Session& s, WorkerStart start, const QString& origin) {
  if (s.recorded) {
    setRecordedSession(s, start, origin);
    return;
  }
  clearRecorded();
  if (!s.worker.empty()) {
    // The rest waits for the worker's hello: its devices and families are not known before.
    backendCombo_->setCurrentIndex(static_cast<int>(backends_.size()));
    if (start == WorkerStart::Now)
      workerPanel_->setCommand(qstr(s.worker), qstr(s.worker_directory));
    else
      workerPanel_->setCommandFromFile(qstr(s.worker), origin.isEmpty() ? tr("a file") : origin,
                                       qstr(s.worker_directory));
    pendingSession_ = s;
    if (start != WorkerStart::Never) workerPanel_->connectWorker();
    return;
  }
  const int backend = backendCombo_->findText(qstr(s.backend));
  if (backend < 0 || backend >= static_cast<int>(backends_.size()))
    throw InputError("backend \"" + s.backend + "\" is not in this build; pick one of the listed backends");
  backendCombo_->setCurrentIndex(backend);
  onBackendChanged();
  applySession(s);
}

void SetupPage::applySession(const Session& s) {
  if (s.isolate && isolate_->isEnabled()) isolate_->setChecked(*s.isolate);
  for (std::size_t i = 0; i < devices_.size(); ++i)
    if (devices_[i].index == s.device) deviceCombo_->setCurrentIndex(static_cast<int>(i));
  const int family = familyCombo_->findText(qstr(s.family));
  if (family < 0) throw InputError("kernel family \"" + s.family + "\" is not known to the " + s.backend + " backend");
  familyCombo_->setCurrentIndex(family);
  onFamilyChanged();
  shapes_->setProblems(s.problems);
  // A session file's space may lack what a spec's launches require of every space of its family.
  if (!s.space.parameters().empty()) space_->setSpace(withLaunchLimits(currentFamily(), s.space));
  strategyCombo_->setCurrentText(qstr(s.strategy.kind));
  budget_->setValue(static_cast<int>(s.strategy.budget));
  strategySeed_->setValue(static_cast<int>(s.strategy.seed));
  method_->setCurrentIndex(method_->findData(qstr(ktune::to_string(s.measure.method))));
  noiseTarget_->setValue(s.measure.noise_target * 100);
  minSamples_->setValue(s.measure.min_samples);
  maxSamples_->setValue(s.measure.max_samples);
  warmupMs_->setValue(s.measure.warmup_ms);
  settleMs_->setValue(s.measure.settle_ms);
  maxMsPerConfig_->setValue(s.measure.max_ms_per_config);
  slowAbort_->setChecked(s.measure.slow_abort);
  rotateBuffers_->setChecked(s.measure.rotate_buffers);
  strategy_ = s.strategy;
  measure_ = s.measure;
  tolerance_ = s.tolerance;
  seed_->setValue(static_cast<int>(s.seed));
  runName_->setText(qstr(s.run_name));
  outputDir_->setText(qstr(s.output_dir));
  updateContexts();
}

TuneRequest SetupPage::request() const {
  TuneRequest r;
  if (isRecordedEntry()) throw InputError(sstr(recordedWhy_));
  if (!currentBackend() && isExternalWorker() && workerPanel_->awaitsConfirmation() && !workerPanel_->isConnecting())
    throw InputError(sstr(workerPanel_->commandOrigin()) +
                     " names a worker command that was not started: press Connect under Device to review it and "
                     "start it (ktune-workbench --trust-worker-command starts it without asking)");
  if (!currentBackend() && isExternalWorker())
    throw InputError(workerPanel_->isConnecting()
                         ? "the external worker has not said hello yet: wait for it, or check its command under Device"
                         : "the external worker is not connected: type its command under Device and press Connect");
  if (!currentBackend()) throw InputError("no backend: this build has none");
  r.family = currentFamily();
  currentDevice();  // throws when the backend found no device
  if (shapes_->problems().empty()) throw InputError("no problem shapes: add at least one under Problem shapes");
  try {
    space_->space();
  } catch (const InputError& e) {
    throw InputError(std::string("the search space has an error, marked in red: ") + e.what());
  }
  const Session s = session();
  r.settings() = s.settings();
  r.space = withLaunchLimits(r.family, r.space);
  if (r.space.parameters().empty())
    throw InputError("the search space has no parameters: add some or press Family default");
  validate(r.settings());
  if (s.output_dir.empty()) throw InputError("no runs folder: choose where the run is saved");
  const std::string name = s.run_name.empty() ? default_run_name(r.family.name) : s.run_name;
  r.run_dir = run_folder(s.output_dir, name);
  if (std::filesystem::exists(r.run_dir / "run_metadata.json"))
    throw InputError("the run folder " + r.run_dir.string() +
                     " already holds a run: choose another run name, or open that run and resume it");
  r.arguments = {"ktune-workbench", "--session", s.to_json().dump()};
  return r;
}

RunTarget SetupPage::runTarget() const {
  Backend* backend = currentBackend();
  if (!backend || isRecordedEntry()) request();  // throws what to do
  RunTarget t;
  t.device = currentDevice();
  if (isExternalWorker()) {
    t.backend = workerPanel_->backend();
    return t;
  }
  // The built-in backends live as long as the application: shared without ownership.
  t.backend = std::shared_ptr<Backend>(std::shared_ptr<Backend>(), backend);
  if (isolates()) {
    worker::WorkerOptions options;
    for (const QString& a : workerProgram_) options.argv.push_back(sstr(a));
    options.argv.insert(options.argv.end(), {"--backend", backend->name(), "--device", std::to_string(t.device.index)});
    t.isolate = std::move(options);
  }
  return t;
}

void SetupPage::saveSessionTo(const QString& file) const { session().save(sstr(file)); }

void SetupPage::loadSessionFrom(const QString& file) {
  setSession(Session::load(sstr(file)), WorkerStart::Confirm, tr("the session file %1").arg(file));
}

}  // namespace ktune::gui
