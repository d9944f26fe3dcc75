// Constraint and geometry expressions (muparser plus ktune's helpers): parse, then evaluate
// with every variable they read set to a few values, zero included (division and mod by zero).
#include "fuzz_input.h"
#include "ktune/expression.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ktune::fuzz::expect_input_errors([&] {
    const ktune::Expression e{std::string(ktune::fuzz::text(data, size))};
    for (double value : {0.0, 1.0, 64.0, -3.0}) {
      ktune::Variables vars;
      for (const auto& name : e.variables()) vars[name] = value;
      ktune::fuzz::expect_input_errors([&] { (void)e.eval(vars); });
    }
  });
  return 0;
}
