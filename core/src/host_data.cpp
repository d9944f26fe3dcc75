#include "ktune/host_data.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <thread>

#include "ktune/error.h"

namespace ktune {

std::uint16_t f32_to_f16(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0));
  if (absx >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds past 65504
  if (absx < 0x38800000u) {  // subnormal half: scale by 2^24 and round to nearest even
    float a;
    std::uint32_t ax = absx;
    std::memcpy(&a, &ax, 4);
    const float scaled = a * 16777216.0f;
    return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(std::nearbyint(scaled)));
  }
  const std::uint32_t mant = absx & 0x7fffffu;
  std::uint32_t h = ((absx >> 23) - 112) << 10 | (mant >> 13);
  const std::uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return static_cast<std::uint16_t>(sign | h);
}

float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  float out;
  if (exp == 0) {
    out = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -out : out;
  }
  const std::uint32_t x = exp == 31 ? (sign | 0x7f800000u | (mant << 13)) : (sign | ((exp + 112) << 23) | (mant << 13));
  std::memcpy(&out, &x, 4);
  return out;
}

std::uint16_t f32_to_bf16(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>(x >> 16);
}

float bf16_to_f32(std::uint16_t h) {
  const std::uint32_t x = static_cast<std::uint32_t>(h) << 16;
  float out;
  std::memcpy(&out, &x, 4);
  return out;
}

float e4m3_to_f32(std::uint8_t code) {
  const int exp = (code >> 3) & 0xf, man = code & 7;
  if (exp == 15 && man == 7) return std::numeric_limits<float>::quiet_NaN();
  const float v = exp == 0 ? std::ldexp(static_cast<float>(man), -9) : std::ldexp(1.0f + man / 8.0f, exp - 7);
  return (code & 0x80) ? -v : v;
}

std::uint8_t f32_to_e4m3(float f) {
  if (std::isnan(f)) return 0x7f;
  const std::uint8_t sign = std::signbit(f) ? 0x80 : 0;
  const float a = std::fabs(f);
  if (a >= 448.0f) return sign | 0x7e;
  // Codes 0x00..0x7e are the non-negative finite values in increasing order: find the pair
  // around `a` and take the nearer, the even code on a tie.
  int lo = 0, hi = 0x7e;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    (e4m3_to_f32(static_cast<std::uint8_t>(mid)) <= a ? lo : hi) = mid;
  }
  const float dlo = a - e4m3_to_f32(static_cast<std::uint8_t>(lo)),
              dhi = e4m3_to_f32(static_cast<std::uint8_t>(hi)) - a;
  const int code = dlo < dhi ? lo : dhi < dlo ? hi : (lo % 2 == 0 ? lo : hi);
  return static_cast<std::uint8_t>(sign | code);
}

double load_elem(const void* data, ElemType t, std::size_t i) {
  const auto* p = static_cast<const unsigned char*>(data);
  switch (t) {
    case ElemType::F16: {
      std::uint16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      return f16_to_f32(v);
    }
    case ElemType::BF16: {
      std::uint16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      return bf16_to_f32(v);
    }
    case ElemType::F32: {
      float v;
      std::memcpy(&v, p + 4 * i, 4);
      return v;
    }
    case ElemType::F64: {
      double v;
      std::memcpy(&v, p + 8 * i, 8);
      return v;
    }
    case ElemType::I8:
      return static_cast<std::int8_t>(p[i]);
    case ElemType::U8:
      return p[i];
    case ElemType::I32: {
      std::int32_t v;
      std::memcpy(&v, p + 4 * i, 4);
      return v;
    }
    case ElemType::U32: {
      std::uint32_t v;
      std::memcpy(&v, p + 4 * i, 4);
      return v;
    }
    case ElemType::I64: {
      std::int64_t v;
      std::memcpy(&v, p + 8 * i, 8);
      return static_cast<double>(v);
    }
  }
  return 0;
}

void store_elem(void* data, ElemType t, std::size_t i, double v) {
  auto* p = static_cast<unsigned char*>(data);
  switch (t) {
    case ElemType::F16: {
      const std::uint16_t h = f32_to_f16(static_cast<float>(v));
      std::memcpy(p + 2 * i, &h, 2);
      return;
    }
    case ElemType::BF16: {
      const std::uint16_t h = f32_to_bf16(static_cast<float>(v));
      std::memcpy(p + 2 * i, &h, 2);
      return;
    }
    case ElemType::F32: {
      const float f = static_cast<float>(v);
      std::memcpy(p + 4 * i, &f, 4);
      return;
    }
    case ElemType::F64:
      std::memcpy(p + 8 * i, &v, 8);
      return;
    case ElemType::I8:
      p[i] = static_cast<unsigned char>(static_cast<std::int8_t>(v));
      return;
    case ElemType::U8:
      p[i] = static_cast<unsigned char>(v);
      return;
    case ElemType::I32: {
      const auto x = static_cast<std::int32_t>(v);
      std::memcpy(p + 4 * i, &x, 4);
      return;
    }
    case ElemType::U32: {
      const auto x = static_cast<std::uint32_t>(v);
      std::memcpy(p + 4 * i, &x, 4);
      return;
    }
    case ElemType::I64: {
      const auto x = static_cast<std::int64_t>(v);
      std::memcpy(p + 8 * i, &x, 8);
      return;
    }
  }
}

namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

std::uint64_t draw(std::uint64_t seed, std::uint64_t i) { return splitmix64(seed ^ (i * 0xd1b54a32d192ed03ULL)); }

namespace {

bool is_integer(ElemType t) {
  return t == ElemType::I8 || t == ElemType::U8 || t == ElemType::I32 || t == ElemType::U32 || t == ElemType::I64;
}

// Splits [0, n) over the hardware threads; fn(begin, end).
template <class F>
void parallel_for(std::size_t n, F fn) {
  const std::size_t workers = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 32);
  if (n < (1u << 16) || workers == 1) return fn(std::size_t{0}, n);
  std::vector<std::thread> pool;
  const std::size_t chunk = (n + workers - 1) / workers;
  for (std::size_t b = 0; b < n; b += chunk) pool.emplace_back(fn, b, std::min(n, b + chunk));
  for (auto& t : pool) t.join();
}

}  // namespace

std::vector<unsigned char> generate(ElemType t, std::size_t count, const ArgInit& init, std::uint64_t seed) {
  std::vector<unsigned char> out(count * elem_size(t), 0);
  if (init.kind == ArgInit::Kind::E4m3) {
    if (elem_size(t) != 1)
      throw InputError(std::string("an e4m3 init fills 8-bit codes, not ") + to_string(t) +
                       " elements: declare the buffer \"u8\" or \"i8\"");
    parallel_for(count, [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i)
        out[i] = f32_to_e4m3(static_cast<float>(init.lo + unit_draw(seed, i) * (init.hi - init.lo)));
    });
    return out;
  }
  if (init.kind != ArgInit::Kind::Uniform) return out;
  const bool integer = is_integer(t);
  parallel_for(count, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      const double u = unit_draw(seed, i);
      const double v = integer ? std::floor(init.lo + u * (init.hi - init.lo + 1)) : init.lo + u * (init.hi - init.lo);
      store_elem(out.data(), t, i, std::min(v, init.hi));
    }
  });
  return out;
}

std::vector<unsigned char> generate_lengths(ElemType t, std::size_t count, std::int64_t min, std::int64_t max,
                                            std::uint64_t seed) {
  ArgInit uniform;
  uniform.kind = ArgInit::Kind::Uniform;
  uniform.lo = static_cast<double>(min);
  uniform.hi = static_cast<double>(max);
  std::vector<unsigned char> out = generate(t, count, uniform, seed);
  // Draw `count` is past every element's draw.
  if (count > 0) store_elem(out.data(), t, draw(seed, count) % count, static_cast<double>(max));
  return out;
}

PageTable generate_page_table(const std::vector<std::int64_t>& lengths, std::int64_t max_pages, std::int64_t page_size,
                              bool shuffle, std::uint64_t seed) {
  PageTable t;
  std::vector<std::int64_t> used(lengths.size());
  for (std::size_t b = 0; b < lengths.size(); ++b) {
    used[b] = (lengths[b] + page_size - 1) / page_size;
    if (used[b] > max_pages)
      throw InputError("sequence " + std::to_string(b) + " has length " + std::to_string(lengths[b]) + ", " +
                       std::to_string(used[b]) + " pages of " + std::to_string(page_size) +
                       " tokens, but a row of the " + "table holds " + std::to_string(max_pages) +
                       ": make its count at least sequences * ceil_div(" + "longest length, page_size)");
    t.pages += used[b];
  }
  if (t.pages > std::numeric_limits<std::int32_t>::max())
    throw InputError(std::to_string(t.pages) + " pages do not fit i32 page numbers");
  std::vector<std::int32_t> order(static_cast<std::size_t>(t.pages));
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::int32_t>(i);
  // Fisher-Yates over the generator's draws (std::shuffle's order differs between standard libraries).
  if (shuffle)
    for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[draw(seed, i - 1) % i]);
  t.table.assign(lengths.size() * static_cast<std::size_t>(max_pages), 0);
  std::size_t next = 0;
  for (std::size_t b = 0; b < lengths.size(); ++b)
    for (std::int64_t i = 0; i < used[b]; ++i) t.table[b * max_pages + i] = order[next++];
  return t;
}

bool poisoned(const void* data, ElemType t, std::size_t i) {
  const std::size_t size = elem_size(t);
  const auto* p = static_cast<const unsigned char*>(data) + i * size;
  return std::all_of(p, p + size, [](unsigned char b) { return b == 0xff; });
}

Comparison compare(const void* got, ElemType t, const std::vector<double>& want, const Tolerance& tol,
                   const CompareScope& scope) {
  const std::vector<std::uint8_t>* mask = scope.compared;
  if (mask && mask->size() != want.size())
    throw InputError("the compared elements (" + std::to_string(mask->size()) + ") do not cover the reference's " +
                     std::to_string(want.size()));
  // Per-thread partial results, merged in thread order: the same answer for any thread count.
  struct Part {
    std::size_t mismatches = 0, compared = 0, unwritten = 0, first_unwritten = 0, worst_index = 0;
    double worst = -1, got = 0, want = 0;
  };
  std::mutex mutex;
  std::vector<std::pair<std::size_t, Part>> parts;
  parallel_for(want.size(), [&](std::size_t begin, std::size_t end) {
    Part p;
    for (std::size_t i = begin; i < end; ++i) {
      if (mask && !(*mask)[i]) continue;
      ++p.compared;
      const double g = load_elem(got, t, i), w = want[i];
      const double err = std::isnan(g) || std::isnan(w) ? INFINITY : std::abs(g - w);
      if (!(err <= tol.atol + tol.rtol * std::abs(w))) {
        ++p.mismatches;
        if (scope.poisoned && poisoned(got, t, i) && p.unwritten++ == 0) p.first_unwritten = i;
      }
      if (err > p.worst) {
        p.worst_index = i;
        p.worst = err;
        p.got = g;
        p.want = w;
      }
    }
    std::lock_guard lock(mutex);
    parts.emplace_back(begin, p);
  });
  std::sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  Comparison c;
  double worst = -1;
  for (const auto& [begin, p] : parts) {
    c.mismatches += p.mismatches;
    c.compared += p.compared;
    if (p.unwritten && c.unwritten == 0) c.first_unwritten = p.first_unwritten;
    c.unwritten += p.unwritten;
    if (p.worst > worst) {
      worst = p.worst;
      c.worst_index = p.worst_index;
      c.worst_got = p.got;
      c.worst_want = p.want;
    }
  }
  c.validation.max_abs_error = std::max(worst, 0.0);
  c.validation.mismatch_fraction =
      c.compared == 0 ? 0 : static_cast<double>(c.mismatches) / static_cast<double>(c.compared);
  return c;
}

void drop_unwritten(std::vector<std::uint8_t>& compared, const void* reference, ElemType t, std::size_t count) {
  if (compared.empty()) compared.assign(count, 1);
  if (compared.size() != count)
    throw InputError("the reference has " + std::to_string(count) + " elements, the check's region " +
                     std::to_string(compared.size()));
  for (std::size_t i = 0; i < count; ++i)
    if (poisoned(reference, t, i)) compared[i] = 0;
}

std::vector<std::uint8_t> region_mask(const std::vector<std::uint64_t>& dims, const std::vector<std::uint64_t>& begin,
                                      const std::vector<std::uint64_t>& end, std::size_t count) {
  std::uint64_t product = 1;
  for (const auto d : dims) product *= d;
  if (product != count)
    throw InputError("the region's dims hold " + std::to_string(product) + " elements, the output " +
                     std::to_string(count) + ": make their product the output's count");
  for (std::size_t d = 0; d < dims.size(); ++d)
    if (begin[d] > end[d] || end[d] > dims[d])
      throw InputError("the region's dim " + std::to_string(d) + " runs [" + std::to_string(begin[d]) + ", " +
                       std::to_string(end[d]) + "), outside [0, " + std::to_string(dims[d]) + ")");
  std::vector<std::uint8_t> mask(count, 0);
  for (std::size_t i = 0; i < count; ++i) {
    std::size_t rest = i;
    bool inside = true;
    for (std::size_t d = 0; d < dims.size() && inside; ++d) {
      const std::uint64_t x = rest % dims[d];
      rest /= dims[d];
      inside = x >= begin[d] && x < end[d];
    }
    mask[i] = inside ? 1 : 0;
  }
  return mask;
}

namespace {

// 12284 -> "12,284": counts a person reads.
std::string grouped(std::size_t n) {
  std::string s = std::to_string(n);
  for (int at = static_cast<int>(s.size()) - 3; at > 0; at -= 3) s.insert(static_cast<std::size_t>(at), ",");
  return s;
}

}  // namespace

std::string mismatch_message(const Comparison& c, std::size_t elements, const Tolerance& tol,
                             const std::string& against, const std::string& note) {
  std::string m = "output differs from " + against + ": " + std::to_string(c.mismatches) + " of " +
                  std::to_string(c.compared ? c.compared : elements) + " elements (" +
                  std::to_string(100 * c.validation.mismatch_fraction) + "%) beyond atol " + std::to_string(tol.atol) +
                  " + rtol " + std::to_string(tol.rtol);
  if (c.compared && c.compared != elements) m += ", " + grouped(elements - c.compared) + " not checked";
  if (c.unwritten)
    m += "; " + grouped(c.unwritten) + " element" + (c.unwritten == 1 ? " was" : "s were") +
         " never written (still the NaN poison, first at index " + std::to_string(c.first_unwritten) +
         "): if the kernel leaves them alone on purpose (a border), give the spec's \"check\" a \"region\" or "
         "\"ignore_unwritten\": true";
  return m + "; worst at index " + std::to_string(c.worst_index) + ": got " + std::to_string(c.worst_got) + ", want " +
         std::to_string(c.worst_want) + " (error " + std::to_string(c.validation.max_abs_error) + note + ")";
}

int rotation_copies(std::size_t input_bytes, double l2_bytes) {
  const std::size_t bytes = std::max<std::size_t>(input_bytes, 1);
  const int wanted = static_cast<int>(std::ceil(3 * l2_bytes / static_cast<double>(bytes)));
  const int by_memory = static_cast<int>((std::size_t{4} << 30) / bytes);
  return std::clamp(std::min(wanted, by_memory), 2, 64);
}

}  // namespace ktune
