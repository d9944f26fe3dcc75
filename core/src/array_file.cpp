#include "ktune/array_file.h"

#include <fstream>
#include <regex>

#include "ktune/error.h"

namespace ktune {

namespace {

[[noreturn]] void bad(const std::filesystem::path& file, const std::string& why) {
  throw InputError(file.string() + ": " + why);
}

std::string read_bytes(std::ifstream& in, std::size_t n) {
  std::string s(n, '\0');
  if (!in.read(s.data(), static_cast<std::streamsize>(n))) s.clear();
  return s;
}

ElemType npy_type(const std::filesystem::path& file, const std::string& descr) {
  static const std::pair<const char*, ElemType> kinds[] = {
      {"f2", ElemType::F16}, {"f4", ElemType::F32}, {"f8", ElemType::F64}, {"i1", ElemType::I8},
      {"u1", ElemType::U8},  {"i4", ElemType::I32}, {"u4", ElemType::U32}, {"i8", ElemType::I64}};
  const bool byte_sized = descr.size() == 3 && descr[2] == '1';
  if (descr.size() == 3 && (descr[0] == '<' || descr[0] == '=' || (descr[0] == '|' && byte_sized)))
    for (const auto& [name, type] : kinds)
      if (descr.compare(1, 2, name) == 0) return type;
  bad(file, "dtype '" + descr +
                "' is not one ktune reads: save it little-endian as float16, float32, float64, int8, uint8, int32, "
                "uint32 or int64 (numpy: a.astype('<f4'))");
}

}  // namespace

std::uint64_t NpyHeader::count() const {
  std::uint64_t n = 1;
  for (const auto d : shape) n *= d;
  return n;
}

NpyHeader read_npy_header(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) bad(file, "cannot open it");
  const std::string magic = read_bytes(in, 8);
  if (magic.size() != 8 || magic.compare(0, 6, "\x93NUMPY") != 0) bad(file, "is not a .npy file (no \\x93NUMPY magic)");
  const int major = static_cast<unsigned char>(magic[6]);
  if (major < 1 || major > 3) bad(file, ".npy format version " + std::to_string(major) + " is not 1, 2 or 3");
  const std::string len = read_bytes(in, major == 1 ? 2 : 4);
  std::size_t header_len = 0;
  for (std::size_t i = len.size(); i-- > 0;) header_len = header_len * 256 + static_cast<unsigned char>(len[i]);
  if (len.empty() || header_len > (1u << 20)) bad(file, "truncated or oversized .npy header");
  const std::string header = read_bytes(in, header_len);
  if (header.empty()) bad(file, "truncated .npy header");
  NpyHeader h;
  h.data_offset = 8 + len.size() + header_len;
  std::smatch m;
  if (!std::regex_search(header, m, std::regex(R"('descr'\s*:\s*'([^']*)')")))
    bad(file, "its .npy header has no 'descr'");
  h.type = npy_type(file, m[1]);
  if (!std::regex_search(header, m, std::regex(R"('fortran_order'\s*:\s*(True|False))")))
    bad(file, "its .npy header has no 'fortran_order'");
  h.fortran_order = m[1] == "True";
  if (!std::regex_search(header, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))")))
    bad(file, "its .npy header has no 'shape'");
  const std::string dims = m[1];
  const std::regex number(R"(\d+)");
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), number); it != std::sregex_iterator(); ++it)
    h.shape.push_back(std::stoull(it->str()));
  int long_dims = 0;
  for (const auto d : h.shape) long_dims += d > 1;
  if (h.fortran_order && long_dims > 1)
    bad(file, "is in Fortran order: save it in C order (numpy: np.save(f, np.ascontiguousarray(a)))");
  return h;
}

std::vector<unsigned char> load_array_file(const std::filesystem::path& file, const std::string& raw_type,
                                           ElemType type, std::uint64_t count) {
  const bool npy = file.extension() == ".npy";
  std::size_t offset = 0;
  if (npy) {
    const NpyHeader h = read_npy_header(file);
    if (h.type != type)
      bad(file, std::string("holds ") + to_string(h.type) + " elements, the argument is " + to_string(type) +
                    ": save it as " + to_string(type));
    if (h.count() != count)
      bad(file, "holds " + std::to_string(h.count()) + " elements, the argument's count is " + std::to_string(count) +
                    " for this problem");
    offset = h.data_offset;
  } else if (elem_type_from_string(raw_type) != type) {
    bad(file, "is read as " + raw_type + " (\"dtype\"), the argument is " + to_string(type));
  }
  const std::uint64_t bytes = count * elem_size(type);
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(file, ec);
  if (ec) bad(file, "cannot read its size: " + ec.message());
  if (size != offset + bytes)
    bad(file, "has " + std::to_string(size - std::min<std::uintmax_t>(size, offset)) +
                  " bytes of data, the argument needs " + std::to_string(bytes) + " (" + std::to_string(count) + " x " +
                  to_string(type) + ")");
  std::ifstream in(file, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset));
  std::vector<unsigned char> data(bytes);
  if (!in.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(bytes))) bad(file, "read failed");
  return data;
}

}  // namespace ktune
