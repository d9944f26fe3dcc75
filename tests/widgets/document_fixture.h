#pragma once
// Opening a run folder in a RunDocument as the workbench does (read off the GUI thread, then
// `opened`), for the widget suites that test pages on a run.
#include <QSignalSpy>
#include <filesystem>
#include <memory>

#include "ktune/widgets/qt_types.h"
#include "ktune/widgets/run_document.h"

namespace fixture {

// True once `doc` has opened `dir`; a minute at most (a loaded CI host reads slowly).
inline bool open_into(ktune::gui::RunDocument& doc, const std::filesystem::path& dir) {
  QSignalSpy opened(&doc, &ktune::gui::RunDocument::opened);
  doc.open(ktune::gui::qstr(dir.string()));
  return opened.wait(60000);
}

// `dir` in a document of its own, or null when it did not open.
inline std::unique_ptr<ktune::gui::RunDocument> open_document(const std::filesystem::path& dir) {
  auto doc = std::make_unique<ktune::gui::RunDocument>();
  if (!open_into(*doc, dir)) return nullptr;
  return doc;
}

}  // namespace fixture
