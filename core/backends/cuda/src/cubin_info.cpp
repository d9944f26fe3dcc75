#include "cubin_info.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace ktune::cuda {

namespace {

// ELF64 little-endian: the layouts of <elf.h>, read field by field so no alignment is assumed.
template <class T>
T read(const std::string& b, std::size_t at) {
  if (at + sizeof(T) > b.size()) throw std::runtime_error("cubin truncated");
  T v;
  std::memcpy(&v, b.data() + at, sizeof(T));
  return v;
}

struct Section {
  std::string name;
  std::uint32_t type = 0, link = 0, info = 0;
  std::uint64_t offset = 0, size = 0, entsize = 0;
};

std::string c_string(const std::string& b, std::size_t at) {
  if (at >= b.size()) return {};
  return std::string(b.c_str() + at, strnlen(b.c_str() + at, b.size() - at));
}

constexpr std::uint32_t kSymtab = 2;
constexpr std::uint8_t kObject = 1, kFunc = 2;
// .nv.info attributes (format byte 0x04: a u16 size and that many bytes follow).
constexpr std::uint8_t kFormatSized = 0x04, kRegCount = 0x2f;
constexpr std::uint64_t kReservedShared = 1024;

}  // namespace

gpu::ModuleInfo parse_cubin(const std::string& b) {
  if (b.size() < 64 ||
      b.compare(0, 4,
                "\x7f"
                "ELF") != 0 ||
      b[4] != 2 || b[5] != 1)
    throw std::runtime_error("not a 64-bit little-endian ELF cubin");
  const auto shoff = read<std::uint64_t>(b, 0x28);
  const auto shentsize = read<std::uint16_t>(b, 0x3a), shnum = read<std::uint16_t>(b, 0x3c),
             shstrndx = read<std::uint16_t>(b, 0x3e);
  std::vector<Section> sections(shnum);
  for (std::size_t i = 0; i < shnum; ++i) {
    const std::size_t h = shoff + i * shentsize;
    Section& s = sections[i];
    s.name = std::to_string(read<std::uint32_t>(b, h));  // resolved below
    s.type = read<std::uint32_t>(b, h + 4);
    s.offset = read<std::uint64_t>(b, h + 0x18);
    s.size = read<std::uint64_t>(b, h + 0x20);
    s.link = read<std::uint32_t>(b, h + 0x28);
    s.info = read<std::uint32_t>(b, h + 0x2c);
    s.entsize = read<std::uint64_t>(b, h + 0x38);
  }
  if (shstrndx >= shnum) throw std::runtime_error("cubin has no section names");
  for (auto& s : sections) s.name = c_string(b, sections[shstrndx].offset + std::stoul(s.name));

  gpu::ModuleInfo out;
  out.knows_constants = true;
  out.registers = kNvidiaRegisters;
  std::vector<std::string> symbol_names;
  bool reserved_shared = false;
  for (const auto& s : sections) {
    if (s.type != kSymtab || s.entsize < 24 || s.link >= shnum) continue;
    const Section& strings = sections[s.link];
    for (std::uint64_t at = s.offset; at + 24 <= s.offset + s.size; at += s.entsize) {
      const std::string name = c_string(b, strings.offset + read<std::uint32_t>(b, at));
      const auto type = static_cast<std::uint8_t>(read<std::uint8_t>(b, at + 4) & 0xf);
      const auto index = read<std::uint16_t>(b, at + 6);
      symbol_names.push_back(name);
      reserved_shared |= name == ".nv.reservedSmem.offset0";
      if (type == kObject && index < shnum && sections[index].name == ".nv.constant3") {
        gpu::ModuleInfo::Constant& c = out.constants[name];
        c.bytes = read<std::uint64_t>(b, at + 16);
        const std::uint64_t from = sections[index].offset + read<std::uint64_t>(b, at + 8);
        for (std::uint64_t i = from; i < from + c.bytes && i < b.size(); ++i) c.initialized |= b[i] != 0;
      }
      if (type == kFunc) out.functions[name];
    }
  }
  for (const auto& s : sections) {
    // .nv.shared.<function>: its static shared memory (a NOBITS section, the size alone counts).
    // Where the toolchain reserves shared memory per block (sm_90: .nv.reservedSmem, 1 KiB), the
    // section starts with it; the device's per-block limits already leave it out, as the
    // driver's CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES does.
    if (s.name.rfind(".nv.shared.", 0) == 0) {
      const std::string fn = s.name.substr(11);
      const std::uint64_t reserved = reserved_shared ? std::min<std::uint64_t>(s.size, kReservedShared) : 0;
      if (out.functions.count(fn)) out.functions[fn].static_shared = s.size - reserved;
    }
    if (s.name != ".nv.info") continue;
    for (std::uint64_t at = s.offset; at + 4 <= s.offset + s.size;) {
      const auto format = read<std::uint8_t>(b, at), attr = read<std::uint8_t>(b, at + 1);
      if (format != kFormatSized) {
        at += 4;  // value-less or 2-byte attributes take one word
        continue;
      }
      const auto size = read<std::uint16_t>(b, at + 2);
      if (attr == kRegCount && size >= 8) {
        const auto sym = read<std::uint32_t>(b, at + 4);
        if (sym < symbol_names.size())
          if (auto it = out.functions.find(symbol_names[sym]); it != out.functions.end())
            it->second.registers = static_cast<int>(read<std::uint32_t>(b, at + 8));
      }
      at += 4 + size;
    }
  }
  return out;
}

}  // namespace ktune::cuda
