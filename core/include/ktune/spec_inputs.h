#pragma once
// A spec's inputs for one problem, generated on the host without a GPU: what a GPU session
// uploads, the sizes it allocates, and the variables its later evaluations read. Generated
// index data (lengths, page tables) publishes variables that size the buffers declared after it
// (a KV cache of exactly the pages the table uses), so generation and sizing go together, in
// declaration order.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ktune/expression.h"
#include "ktune/kernel_spec.h"
#include "ktune/problem.h"

namespace ktune {

struct HostInput {
  ElemType type;
  std::vector<unsigned char> data;
};

struct SpecInputs {
  std::map<std::string, HostInput> inputs;      // every input buffer's data
  std::map<std::string, std::uint64_t> counts;  // element counts of the input and output buffers
  // `device` plus every published variable ("lengths_total", "page_table_pages"): the extra
  // variables of every later evaluation (KernelSpec::variables' `device`).
  Variables variables;
};

// Walks the arguments in declaration order: sizes each input and output buffer for the default
// space (max_arg_count, seeing what earlier arguments published), generates each input from
// `seed`, the problem's key and the argument's name (the same data for every config and on every
// machine) or reads it from its file ("init": {"file"}), and publishes what generated index data
// publishes. Throws InputError naming the spec, the argument and the values for bounds, sizes or
// types that cannot hold, and the file for one that does not hold the argument's type and count.
SpecInputs generate_spec_inputs(const KernelSpec& spec, const Problem& p, const Variables& device, std::uint64_t seed);

}  // namespace ktune
