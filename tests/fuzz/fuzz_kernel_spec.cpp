// The kernel spec reader (--kernel-spec FILE and the built-in families), with the kernel source
// embedded so no file is read: every part of from_json and the expression checks.
#include <map>
#include <string>

#include "fuzz_input.h"
#include "ktune/backends/cuda_spec.h"
#include "ktune/json_read.h"
#include "ktune/kernel_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::map<std::string, std::string> files{
      {"gemm.cu", "// gemm"}, {"qmatmul.cu", "// qmatmul"}, {"axpy.cu", "// axpy"}};
  ktune::fuzz::expect_input_errors([&] {
    (void)ktune::KernelSpec::from_json(ktune::parse_json(ktune::fuzz::text(data, size), "fuzz"), {},
                                       ktune::cuda_spec_dialect(), "fuzz", &files);
  });
  return 0;
}
