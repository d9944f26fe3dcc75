#include "low_precision.h"

#include <cmath>

namespace ktune::cpu {

std::uint8_t e4m3_encode(float x) {
  if (std::isnan(x)) return 0x7f;
  const std::uint8_t sign = std::signbit(x) ? 0x80 : 0;
  const float a = std::fabs(x);
  if (a >= kE4m3Max) return sign | 0x7e;
  // Codes 0x00..0x7e are the non-negative finite values in increasing order: find the pair
  // around `a` and take the nearer, the even code on a tie.
  int lo = 0, hi = 0x7e;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    (kE4m3Table[mid] <= a ? lo : hi) = mid;
  }
  const float dlo = a - kE4m3Table[lo], dhi = kE4m3Table[hi] - a;
  const int code = dlo < dhi ? lo : dhi < dlo ? hi : (lo % 2 == 0 ? lo : hi);
  return sign | static_cast<std::uint8_t>(code);
}

}  // namespace ktune::cpu
