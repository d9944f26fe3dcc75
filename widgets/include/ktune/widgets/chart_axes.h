#pragma once
// What the landscape's axes say: ticks at round numbers with only the digits their step needs
// (20, 40, 60, not 19.7175, 39.435), integer ticks for counts, one time unit per chart chosen from
// its data, and a parameter's values placed by their kind: strings and booleans as categories,
// powers of two on a log2 scale, other integers at their values.
#include <QString>
#include <vector>

#include "ktune/param_value.h"

class QCategoryAxis;

namespace ktune::gui {

struct AxisTick {
  double at;
  QString label;
};

// Round-number ticks (1, 2 or 5 × 10^k apart) within [lo, hi], at most about `target` of them;
// `integers`: never a step below 1 (counts, indices).
std::vector<AxisTick> niceTicks(double lo, double hi, int target, bool integers = false);
// Ticks for a log axis drawn in log10 units: `lo` and `hi` are log10 of the values. At 1, 2, 5 ×
// 10^k (every digit over a range of less than a decade), labelled with the values; `at` is log10.
std::vector<AxisTick> logTicks(double lo, double hi);
// Replaces `axis`'s labels by `ticks` that fall within its range.
void setAxisTicks(QCategoryAxis* axis, const std::vector<AxisTick>& ticks);

// A time unit: its name and how many nanoseconds one of it is.
struct TimeUnit {
  QString name;
  double ns;
};
// The unit in which `typicalNs` (a chart's median time) reads between 1 and 1000: ns, µs, ms or s.
TimeUnit timeUnitFor(double typicalNs);
// The median of `values` (reordered); 0 when empty.
double medianOf(std::vector<double> values);

// Where a parameter's values go on an axis.
class ParameterAxis {
 public:
  enum class Kind { Categories, Log2, Linear };
  // `values`: every value seen, any order, repeats allowed; `text` spells one for a label.
  template <class Text>
  ParameterAxis(std::vector<ParamValue> values, Text text) {
    build(std::move(values));
    for (std::size_t i = 0; i < values_.size(); ++i) labels_.push_back(text(values_[i]));
  }
  ParameterAxis() = default;

  Kind kind() const { return kind_; }
  // The value's position; false for one not among the values given.
  bool position(const ParamValue& value, double* x) const;
  // A label at each value (all kinds but a Linear axis of many values, which gets round numbers).
  std::vector<AxisTick> ticks(double lo, double hi) const;
  std::size_t size() const { return values_.size(); }

 private:
  void build(std::vector<ParamValue> values);

  Kind kind_ = Kind::Linear;
  std::vector<ParamValue> values_;  // sorted, distinct
  std::vector<QString> labels_;
};

}  // namespace ktune::gui
