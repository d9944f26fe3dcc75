#pragma once
// The parser's reading of generated index data ("init": {"lengths": ...}, {"page_table": ...} and
// MoE routings; format in kernel_spec.h) and its parts shared with kernel_spec_parse.cpp. Internal
// to the parser.
#include <cstddef>
#include <map>
#include <string>

#include "json_path.h"
#include "ktune/kernel_spec.h"

namespace ktune::detail {

// An expression or a name, written as a string or a plain number.
std::string spec_text(const JsonPath& v);

void read_lengths_init(const JsonPath& l, ArgInit& init);
// `spec` holds the arguments declared before `arg`: the lengths argument must be one of them.
void read_page_table_init(const JsonPath& t, SpecArgument& arg, const KernelSpec& spec);
// "routing", "expert_offsets" or "expert_order" (`in` is the "init" object); the routing an
// expert view reads must be declared before `arg`.
void read_routing_init(const JsonPath& in, SpecArgument& arg, const KernelSpec& spec);
// Lengths, page tables and routings are integer inputs whose values index memory.
void check_index_buffer(const JsonPath& a, const SpecArgument& arg);
// Constraints may read names the parser does not know (SearchSpace checks them), but never a
// published variable (`publisher`'s keys): the space is the same for every input.
void check_no_generated(const std::string& constraint, const std::map<std::string, std::size_t>& publisher);

}  // namespace ktune::detail
