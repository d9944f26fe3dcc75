#pragma once
// Host-side data for GPU workloads: seeded generation (identical for every config of a problem,
// and independent of thread count), 16-bit float conversions, and the output comparison.
#include <cstdint>
#include <string>
#include <vector>

#include "ktune/backend.h"
#include "ktune/kernel_spec.h"

namespace ktune {

std::uint16_t f32_to_f16(float f);
float f16_to_f32(std::uint16_t h);
std::uint16_t f32_to_bf16(float f);
float bf16_to_f32(std::uint16_t h);
// fp8 e4m3 as DeepSeek-V3 and aiter store it (OCP's "fn" variant: no infinities, 0x7f and 0xff
// are NaN, largest finite 448): the code nearest to f (ties to the even code), saturating at
// +-448, NaN to 0x7f; and a code's value, exact in f32.
std::uint8_t f32_to_e4m3(float f);
float e4m3_to_f32(std::uint8_t code);

// Element i of a buffer of type t, as double.
double load_elem(const void* data, ElemType t, std::size_t i);
// Writes v (rounded to t) as element i.
void store_elem(void* data, ElemType t, std::size_t i, double v);

// Draw i of the counter-based generator behind every seeded input: depends only on (seed, i), the
// same on every machine and standard library (std:: distributions are not).
std::uint64_t draw(std::uint64_t seed, std::uint64_t i);
// Draw i as a double uniform in [0, 1) (53 bits), for workloads built from draws.
inline double unit_draw(std::uint64_t seed, std::uint64_t i) {
  return static_cast<double>(draw(seed, i) >> 11) * 0x1.0p-53;
}

// `count` elements of type t drawn from `init` (Uniform, E4m3; any other kind gives zeros) with a
// counter-based generator: element i depends only on (seed, i). E4m3 throws InputError unless t
// is 8-bit.
std::vector<unsigned char> generate(ElemType t, std::size_t count, const ArgInit& init, std::uint64_t seed);

// `count` lengths (t: i32 or i64) drawn uniformly from [min, max] with generate()'s generator,
// one of them, at a seeded index, exactly max: the problem's longest length always runs.
std::vector<unsigned char> generate_lengths(ElemType t, std::size_t count, std::int64_t min, std::int64_t max,
                                            std::uint64_t seed);

// A paged KV cache's page table: one row of `max_pages` i32 entries per length, row b's first
// ceil(lengths[b] / page_size) entries distinct pages of one pool of exactly `pages` (the sum of
// those counts), in a seeded random order when `shuffle` (else 0, 1, ... row by row), the rest 0.
struct PageTable {
  std::vector<std::int32_t> table;
  std::int64_t pages = 0;
};
// Throws InputError when a length needs more than max_pages pages, naming it.
PageTable generate_page_table(const std::vector<std::int64_t>& lengths, std::int64_t max_pages, std::int64_t page_size,
                              bool shuffle, std::uint64_t seed);

struct Comparison {
  Validation validation;
  std::size_t mismatches = 0;
  std::size_t compared = 0;   // elements compared (all of them unless a scope says otherwise)
  std::size_t unwritten = 0;  // mismatches still holding the poison bytes: never written by the kernel
  std::size_t first_unwritten = 0;
  std::size_t worst_index = 0;  // largest |got - want|, NaN counting as infinite
  double worst_got = 0, worst_want = 0;
};
// Which elements compare() looks at, and whether `got` was poisoned before the kernel ran.
struct CompareScope {
  const std::vector<std::uint8_t>* compared = nullptr;  // 1: compared; null: every element
  bool poisoned = true;  // filled with 0xff bytes: a mismatch still holding them was never written
};
// Compares `got` (type t) with `want`: an element matches when |got - want| <= atol + rtol*|want|
// (NaN never matches); mismatch_fraction is over the compared elements.
Comparison compare(const void* got, ElemType t, const std::vector<double>& want, const Tolerance& tol,
                   const CompareScope& scope = {});
// Whether element i still holds the poison bytes (0xff) an output is filled with before a run.
bool poisoned(const void* data, ElemType t, std::size_t i);
// Clears `compared` (1 = compared; empty: all `count` elements, made explicit) where `reference`
// holds the poison bytes: elements the reference never wrote are not checked.
void drop_unwritten(std::vector<std::uint8_t>& compared, const void* reference, ElemType t, std::size_t count);
// A box of a dense row-major view of `count` elements: dims innermost first, element
// (x0, x1, ...) at x0 + dims[0]*(x1 + dims[1]*(...)), compared where begin[d] <= x_d < end[d].
// Throws InputError when the dims' product is not `count` or a bound lies outside its dim.
std::vector<std::uint8_t> region_mask(const std::vector<std::uint64_t>& dims, const std::vector<std::uint64_t>& begin,
                                      const std::vector<std::uint64_t>& end, std::size_t count);
// How many copies of the inputs (`input_bytes` in all) the timed runs rotate through so that a
// launch finds its inputs out of L2: 3x L2 in all, at most 4 GiB, between 2 and 64 copies.
int rotation_copies(std::size_t input_bytes, double l2_bytes);

// "output differs from <against>: 3 of 4096 elements (0.07%) beyond atol ... (error E<note>)",
// and how many of them were never written: a WrongResult's message.
std::string mismatch_message(const Comparison& c, std::size_t elements, const Tolerance& tol,
                             const std::string& against, const std::string& note = "");

}  // namespace ktune
