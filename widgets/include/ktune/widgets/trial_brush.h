#pragma once
// TrialBrush: the trials kept by the brushes on the Analyse page's parallel coordinates, one
// object for the whole workbench (TrialsModel::brush()), so every page shows the same brush and
// clearing it anywhere clears it everywhere:
//  - the Analyse page sets it as the brushes change, and clears its brushes when it is cleared;
//  - the Trials page filters its table to it (the "Brushed" button);
//  - the Landscape page's charts draw its trials as they are and dim the rest, under a note that
//    says so and clears it.
// A new run in the model clears it: its ids would name other trials.
#include <QList>
#include <QObject>
#include <QSet>
#include <QString>

namespace ktune::gui {

class TrialBrush : public QObject {
  Q_OBJECT
 public:
  explicit TrialBrush(QObject* parent = nullptr) : QObject(parent) {}

  // The trials kept (best first) by a brush over shape `problemKey`'s configs. An empty list is
  // still a brush: one that keeps nothing.
  void set(const QList<qint64>& ids, const QString& problemKey);
  void clear();

  bool active() const { return active_; }
  bool contains(qint64 id) const { return active_ && set_.contains(id); }
  const QList<qint64>& ids() const { return ids_; }
  const QSet<qint64>& idSet() const { return set_; }
  const QString& shape() const { return shape_; }

 signals:
  // After set() or clear() changed what is brushed.
  void changed();

 private:
  bool active_ = false;
  QList<qint64> ids_;
  QSet<qint64> set_;
  QString shape_;
};

}  // namespace ktune::gui
