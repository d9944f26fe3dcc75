#pragma once
// The checks KernelSpec::from_json makes once every part is read (kernel_spec_checks.cpp): that
// every expression parses and reads only names the spec knows, and the limits every launch must
// respect on the device, added to the default space as constraints.
#include "ktune/kernel_spec.h"

namespace ktune::detail {

// Throws InputError naming the field whose expression reads an unknown or unreadable name.
void check_spec_expressions(KernelSpec& spec, const SpecDialect& dialect);
// Adds the launches' derived limits (threads, shared memory, clusters) to the default space and
// to the family's launch_limits.
void add_derived_limits(KernelSpec& spec, const SpecDialect& dialect);

}  // namespace ktune::detail
