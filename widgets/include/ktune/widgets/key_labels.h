#pragma once
// Problem keys listed side by side read by what tells them apart. Keys of one run share most of
// their fields (grouped_gemm's experts, hidden and intermediate; a8w8's M, N and K), and a view
// that cuts a key at its width cuts exactly the field that differs (pass=, q_dtype=). KeyLabels
// keeps, for each key, only the fields whose values are not the same in every key listed, in the
// key's own order: "tokens=64, pass=dX". The shared fields are said once (common()) and the whole
// key goes in a tooltip (toolTip()). Every list of keys uses it: tables, shape pickers, legends.
#include <QHash>
#include <QString>
#include <QStringList>
#include <string>
#include <vector>

class QComboBox;

namespace ktune::gui {

class KeyLabels {
 public:
  KeyLabels() = default;
  explicit KeyLabels(const QStringList& keys);
  explicit KeyLabels(const std::vector<std::string>& keys);

  // The fields of `key` that tell it apart from the other keys, joined by ", ". The whole key
  // where nothing tells keys apart (a single key) or `key` was not among those given.
  QString label(const QString& key) const;
  QString label(const std::string& key) const;
  // The fields every key shares, "experts=8, hidden=512": what the labels leave out; empty with
  // fewer than two keys or when no field is shared.
  QString common() const { return common_; }
  // For a tooltip: the whole key, and which fields the short label leaves out.
  QString toolTip(const QString& key) const;
  QString toolTip(const std::string& key) const;
  bool isEmpty() const { return labels_.isEmpty(); }

 private:
  QHash<QString, QString> labels_;
  QString common_;
};

// Adds one item per key to a shape picker: its label as text, the key as data, toolTip() as
// tooltip, and the shared fields as the box's own tooltip.
void addKeyItems(QComboBox* box, const QStringList& keys, const KeyLabels& labels);

}  // namespace ktune::gui
