#pragma once
// Setup page: backend and device (with its properties), kernel family, problem shapes, search
// space with live counts, strategy and budget, measurement settings, run name and folder.
// Besides the built-in backends, "external worker" measures through any program that speaks the
// worker protocol (WorkerPanel); built-in backends may measure in a worker process (Isolate).
#include <QStringList>
#include <QWidget>
#include <memory>
#include <optional>
#include <vector>

#include "ktune/backend.h"
#include "ktune/tuner.h"
#include "ktune/widgets/session.h"
#include "ktune/widgets/tune_worker.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLayout;
class QLineEdit;
class QSpinBox;
class QTableView;
class QTableWidget;

namespace ktune::gui {

class ShapesModel;
class SpaceEditor;
class WorkerPanel;

// What setSession does with a session's worker command.
enum class WorkerStart {
  Now,      // the caller's own session (the page's, a test's): start it
  Confirm,  // read from a file: start it as the worker panel's FileCommands say (ask by default)
  Never,    // read from a run folder that is only being shown: fill it in; Connect asks
};

class SetupPage : public QWidget {
  Q_OBJECT
 public:
  SetupPage(std::vector<std::unique_ptr<Backend>>& backends, QWidget* parent = nullptr);
  ~SetupPage() override;

  Session session() const;
  // Throws InputError when the session names a backend, device or family this build lacks. A
  // session with a worker command connects to that worker first, as `start` says, and applies
  // the rest once it has said hello; `origin` names the file it came from ("the session file X").
  // A session read from a run (Session::from_run) shows the run as it was made whatever this
  // build and machine have: a worker run's family, shapes, space and settings before its worker
  // is connected, and a run this build cannot make again (an imported cache, a replay, a backend,
  // family or device this machine lacks) through an entry of its own in the backend list, on
  // which Start says why it cannot tune; originText() says what the run was and what it does not
  // record.
  void setSession(const Session& session, WorkerStart start = WorkerStart::Now, const QString& origin = {});
  // The line above the page about the run it shows ("" when it shows none).
  QString originText() const;
  // The backend list's entry that shows a run this build cannot make again is selected.
  bool showsRecordedRun() const;

  // The "external worker" entry of the backend list (after the built-in backends).
  bool isExternalWorker() const;
  WorkerPanel* workerPanel() const { return workerPanel_; }
  // The program and leading arguments that serve a built-in backend over the worker protocol
  // (`ktune worker`, `ktune-workbench worker`); "--backend B --device I" is appended. Empty:
  // Isolate is unavailable.
  void setWorkerProgram(const QStringList& argv);
  bool isolates() const;

  // null for the external worker before it is connected.
  Backend* currentBackend() const;
  DeviceInfo currentDevice() const;
  KernelFamily currentFamily() const;
  // Everything the tuner needs; throws InputError saying what to fix on this page.
  TuneRequest request() const;
  // The backend and device to measure with (an isolated worker when Isolate is ticked).
  RunTarget runTarget() const;

  ShapesModel* shapesModel() const { return shapes_.get(); }
  SpaceEditor* spaceEditor() const { return space_; }
  // Adds shapes as if typed into the shape box; returns false and shows why when they do not parse.
  bool addShapes(const QString& text);

  void saveSessionTo(const QString& file) const;  // throws InputError
  // Throws InputError. A worker command in the file starts only as WorkerStart::Confirm says.
  void loadSessionFrom(const QString& file);

 private:
  // The page's groups, each with its widgets' connections.
  QLayout* makeDeviceForm();
  QLayout* makeShapesLayout();
  QLayout* makeSpaceLayout();
  QLayout* makeStrategyForm();
  QLayout* makeMeasureForm();
  QLayout* makeRunForm();
  void fillBackends();
  void onBackendChanged();
  void onDeviceChanged();
  // The tp split combo offers the family's splits (gemm: out, in; attention: heads).
  void setTpSplits(const KernelFamily& family);
  void onFamilyChanged();
  void updateContexts();
  void showDeviceProperties(const DeviceInfo& device);
  void setShapeMessage(const QString& message);
  void onWorkerConnected();
  void applySession(const Session& session);
  // setup_page_recorded.cpp: a session read from a run.
  void setRecordedSession(const Session& session, WorkerStart start, const QString& origin);
  void clearRecorded();
  // The backend that lists devices and families: the current one, or, for a worker run whose
  // worker is not connected, the run's record.
  Backend* listedBackend() const;
  bool isRecordedEntry() const;
  // Shows the recorded run's session again after the listing changed under it.
  void reapplyRecorded();

  std::vector<std::unique_ptr<Backend>>& backends_;
  std::vector<DeviceInfo> devices_;
  std::vector<KernelFamily> families_;
  std::unique_ptr<ShapesModel> shapes_;

  QComboBox* backendCombo_;
  WorkerPanel* workerPanel_;
  QCheckBox* isolate_;
  QStringList workerProgram_;
  std::optional<Session> pendingSession_;  // waits for its worker's hello
  // A run's session (setSession of Session::from_run), its record as a backend, and why Start
  // cannot tune on that record (empty when the run shows through a worker or a built-in backend).
  std::optional<Session> recorded_;
  std::unique_ptr<Backend> recordedBackend_;
  QString recordedWhy_;
  bool recordedIsolate_ = false;
  QLabel* origin_;
  QComboBox* deviceCombo_;
  QTableWidget* deviceTable_;
  QComboBox* familyCombo_;
  QLabel* familyLabel_;
  QLineEdit* shapeEdit_;
  QSpinBox* tpSize_;
  QComboBox* tpSplit_;
  QTableView* shapesView_;
  QLabel* shapeMessage_;
  SpaceEditor* space_;
  QComboBox* strategyCombo_;
  QSpinBox* budget_;
  QSpinBox* strategySeed_;
  QComboBox* method_;
  QDoubleSpinBox* noiseTarget_;
  QSpinBox* minSamples_;
  QSpinBox* maxSamples_;
  QDoubleSpinBox* warmupMs_;
  QDoubleSpinBox* settleMs_;
  QDoubleSpinBox* maxMsPerConfig_;
  QCheckBox* slowAbort_;
  QCheckBox* rotateBuffers_;
  QSpinBox* seed_;
  QLineEdit* runName_;
  QLineEdit* outputDir_;
  // The settings as a loaded session or run gave them: those without a widget of their own (the
  // tolerance, the time budget, remeasure_top, min_sample_ms, slow_abort_margin) are kept from it.
  StrategySpec strategy_;
  MeasureSettings measure_;
  Tolerance tolerance_;
};

}  // namespace ktune::gui
