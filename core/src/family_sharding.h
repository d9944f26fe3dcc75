#pragma once
// How a family shards and which shapes it can run, as JSON: "tp_out_field", "tp_in_field",
// "tp_head_fields" and "shape_rules". A kernel spec (kernel_spec.h) and a worker's hello
// (docs/worker-protocol.md) spell them alike, so both read and write them here. Private to the core.
#include <string>

#include <nlohmann/json.hpp>

#include "json_path.h"
#include "ktune/kernel_family.h"

namespace ktune::detail {

// The key field that `root[key]` names ("" when absent): one of f's key fields, numeric when
// `numeric`. InputError naming the JSON path otherwise.
std::string key_field_of(const JsonPath& root, const char* key, const KernelFamily& f, bool numeric);

// Reads root's tensor-parallel splits into f.tp_splits and its shape rules into f.shape_rules,
// checked against f.key_fields (read before): "tp_out_field": "N", "tp_in_field": "K",
// "tp_head_fields": ["num_q_heads", {"name": "num_kv_heads", "at_least_one": true}],
// "shape_rules": [{"expr": "mod(num_q_heads, num_kv_heads) == 0", "description": "..."}].
// InputError naming the JSON path of the culprit.
void read_sharding(const JsonPath& root, KernelFamily& f);

// Writes f's splits and shape rules into `out` as read_sharding reads them; a family without
// any writes nothing (a hello of an older worker looks the same).
void write_sharding(const KernelFamily& f, nlohmann::json& out);

}  // namespace ktune::detail
