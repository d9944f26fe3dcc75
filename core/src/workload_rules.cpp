#include "ktune/workload_rules.h"

#include <iterator>

#include "ktune/error.h"
#include "ktune/kernel_family.h"
#include "ktune/run_store.h"

namespace ktune {

namespace {

// What each version from 2 on changed ([v - 2]), for the message that refuses a run made before it.
constexpr const char* kChanges[] = {
    "a MoE routing now comes from the workload seed, experts, tokens and topk alone, the same for fwd, dX and dW, "
    "where it came from the whole problem key"};
static_assert(std::size(kChanges) == kWorkloadRules - 1, "say what the new workload rules change");

}  // namespace

void check_workload_rules(const RunMetadata& run, const std::string& run_dir, const KernelFamily& family) {
  const int recorded = run.workload_rules;
  if (recorded == kWorkloadRules || (recorded < kWorkloadRules && recorded >= family.workload_rules_since)) return;
  const std::string rules = "workload rules " + std::to_string(recorded);
  std::string why = "cannot resume " + run_dir + ": its trials were measured on inputs made under " + rules +
                    (recorded == 1 ? " (its run_metadata.json records none: it predates them)" : "");
  if (recorded > kWorkloadRules)
    why += ", and this ktune knows rules up to " + std::to_string(kWorkloadRules) + " only: it cannot tell whether " +
           family.name + "'s inputs are still the same";
  else
    why += ", and this ktune makes " + family.name + "'s under rules " + std::to_string(kWorkloadRules) + ", where " +
           kChanges[family.workload_rules_since - 2] +
           ": the configs measured from here on would be timed on other work than the recorded ones";
  throw InputError(why + ". Start a new run, or resume it with the ktune that recorded it (one of " + rules + ")");
}

}  // namespace ktune
