#pragma once
// The 8- and 16-bit number formats of gemm_a8w8_blockscale, decoded and rounded exactly on the
// host (CPUs have no fp8 arithmetic): fp8 e4m3 as DeepSeek-V3 and aiter store it (the "fn"
// variant of the OCP spec: no infinities, 0x7f and 0xff are NaN, largest finite 448), and bf16
// rounded from f32 to nearest even, as GPUs convert.
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>

#include "ktune/host_data.h"

namespace ktune::cpu {

inline constexpr float kE4m3Max = 448.0f;

// Sign bit 7, exponent bits 6..3 (bias 7), mantissa bits 2..0; exponent 0 is subnormal
// (mantissa * 2^-9); exponent 15 with mantissa 7 is NaN. Every value is exact in f32.
constexpr float e4m3_value(std::uint8_t code) {
  const int exp = (code >> 3) & 0xf, man = code & 7;
  if (exp == 15 && man == 7) return std::numeric_limits<float>::quiet_NaN();
  float v = exp == 0 ? man / 512.0f : (1.0f + man / 8.0f);
  for (int e = 7; e < exp; ++e) v *= 2.0f;
  for (int e = exp; e < 7 && exp != 0; ++e) v /= 2.0f;
  return (code & 0x80) ? -v : v;
}

constexpr std::array<float, 256> make_e4m3_table() {
  std::array<float, 256> t{};
  for (int c = 0; c < 256; ++c) t[c] = e4m3_value(static_cast<std::uint8_t>(c));
  return t;
}

// The decode table the kernels and the reference use.
inline constexpr std::array<float, 256> kE4m3Table = make_e4m3_table();

// The e4m3 code nearest to `x` (ties to the even code), saturating at +-448; NaN gives 0x7f:
// the core's encoder, which spec inits ({"e4m3": [lo, hi]}) draw codes with too.
inline std::uint8_t e4m3_encode(float x) { return f32_to_e4m3(x); }

// f32 -> bf16 bits, round to nearest even; NaN stays a (quiet) NaN.
inline std::uint16_t bf16_round(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

inline float bf16_value(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

}  // namespace ktune::cpu
