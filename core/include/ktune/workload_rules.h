#pragma once
// The rules by which a problem's inputs are made from the run's workload seed, versioned. A run's
// trials compare only when every config was timed on the same inputs, so a run made under one
// version is not continued (resume) under another where the family's inputs differ between them,
// and shards made under different versions are not merged (run_merge.h, as shards of different
// workload seeds). Every run records the version it was made under (run_metadata.json
// "workload_rules"; a run without it was made under version 1), and every family the version in
// which its inputs last changed (KernelFamily::workload_rules_since).
//   1  kernel specs drew every generated argument from seed ^ fnv1a64(key + "/" + name), a MoE
//      routing included, so fwd, dX and dW of one shape routed differently; the CPU grouped_gemm
//      family drew its routing from the seed and a constant.
//   2  a MoE routing comes from the workload seed, experts, tokens and topk alone
//      (moe_routing_seed, moe_routing.h): one routing for every pass, the CPU family and the specs.
#include <string>

namespace ktune {

struct KernelFamily;
struct RunMetadata;

inline constexpr int kWorkloadRules = 2;
// The version that changed MoE routings: that of the CPU grouped_gemm family and of a spec with
// an "init": {"routing": ...} argument.
inline constexpr int kMoeRoutingRules = 2;

// Resuming the run in `run_dir` with `family`: an InputError naming the run, its rules and this
// ktune's, and what to do (start a new run, or resume with the ktune that recorded it) when the
// run was made under rules this ktune does not make the family's inputs by: older ones the family
// changed after, or newer ones this ktune does not know.
void check_workload_rules(const RunMetadata& run, const std::string& run_dir, const KernelFamily& family);

}  // namespace ktune
