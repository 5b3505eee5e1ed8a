// NumPy .npy files (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html):
// magic "\x93NUMPY", version, header length, a Python dict literal header, then the raw data.
#include <cctype>
#include <cstring>

#include "minfer/io.h"
#include "runtime/file_util.h"

namespace minfer {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

struct NpyHeader {
  DType dtype = DType::f32;
  std::vector<int64_t> dims;
};

// The descr strings numpy writes on a little-endian machine ('|' = byte order irrelevant).
bool dtype_from_descr(const std::string& d, DType* out) {
  static const struct {
    const char* descr;
    DType dtype;
  } kTable[] = {{"<f4", DType::f32},    {"<f2", DType::f16}, {"|i1", DType::i8},
                {"|u1", DType::u8},     {"<i4", DType::i32}, {"<i8", DType::i64},
                {"|b1", DType::boolean}};
  for (const auto& e : kTable)
    if (d == e.descr) {
      *out = e.dtype;
      return true;
    }
  return false;
}

const char* descr_of(DType t) {
  switch (t) {
    case DType::f32: return "<f4";
    case DType::f16: return "<f2";
    case DType::i8: return "|i1";
    case DType::u8: return "|u1";
    case DType::i32: return "<i4";
    case DType::i64: return "<i8";
    case DType::boolean: return "|b1";
  }
  return "?";
}

// Parses the header dict, e.g. {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }.
// Only these three keys (in any order) are understood, which is all numpy writes.
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& path) : s_(text), path_(path) {}

  NpyHeader parse() {
    NpyHeader h;
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    while (!peek('}')) {
      std::string key = quoted();
      expect(':');
      if (key == "descr") {
        std::string descr = quoted();
        if (!dtype_from_descr(descr, &h.dtype))
          throw Error(ErrorCode::Unsupported,
                      ".npy file '" + path_ + "': dtype '" + descr +
                          "' is not supported (minfer reads <f4 <f2 |i1 |u1 <i4 <i8 |b1)");
        have_descr = true;
      } else if (key == "fortran_order") {
        bool fortran = word() == "True";
        check(!fortran, ErrorCode::Unsupported,
              ".npy file '" + path_ + "': Fortran-order arrays are not supported (save C order)");
        have_order = true;
      } else if (key == "shape") {
        h.dims = tuple();
        have_shape = true;
      } else {
        fail("unknown key '" + key + "'");
      }
      if (!peek('}')) expect(',');
    }
    expect('}');
    if (!have_descr || !have_order || !have_shape)
      fail("needs the keys 'descr', 'fortran_order' and 'shape'");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(ErrorCode::InvalidModel,
                ".npy file '" + path_ + "': bad header (" + what + "): " + s_);
  }
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool peek(char c) {
    skip_space();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  void expect(char c) {
    if (!peek(c)) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string quoted() {
    skip_space();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) fail("expected a string");
    char q = s_[pos_++];
    size_t end = s_.find(q, pos_);
    if (end == std::string::npos) fail("unterminated string");
    std::string r = s_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return r;
  }
  std::string word() {
    skip_space();
    size_t start = pos_;
    while (pos_ < s_.size() && std::isalpha(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    std::string w = s_.substr(start, pos_ - start);
    if (w != "True" && w != "False") fail("expected True or False");
    return w;
  }
  std::vector<int64_t> tuple() {
    std::vector<int64_t> dims;
    expect('(');
    while (!peek(')')) {
      skip_space();
      size_t start = pos_;
      int64_t v = 0;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        if (v > (INT64_MAX - 9) / 10) fail("dimension too large");
        v = v * 10 + (s_[pos_++] - '0');
      }
      if (pos_ == start) fail("expected a dimension");
      if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;  // Python 2 long literal
      dims.push_back(v);
      if (!peek(')')) expect(',');
    }
    expect(')');
    return dims;
  }

  const std::string& s_;
  const std::string& path_;
  size_t pos_ = 0;
};

uint32_t read_le(const unsigned char* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

Tensor load_npy(const std::string& path) {
  std::ifstream in = detail::open_for_reading(path, ".npy file");
  uint64_t size = detail::stream_size(in);
  auto bad = [&](const std::string& why) {
    return Error(ErrorCode::InvalidModel, ".npy file '" + path + "': " + why);
  };

  unsigned char pre[12] = {};
  in.read(reinterpret_cast<char*>(pre), std::min<uint64_t>(size, sizeof(pre)));
  if (size < kMagicLen || std::memcmp(pre, kMagic, kMagicLen) != 0)
    throw bad("not a .npy file (bad magic; expected \\x93NUMPY)");
  if (size < 10) throw bad("truncated .npy file (" + std::to_string(size) + " bytes)");
  int major = pre[6];
  if (major < 1 || major > 3)
    throw bad("unsupported .npy format version " + std::to_string(major) + "." +
              std::to_string(pre[7]));
  // Version 1 has a 2-byte header length; versions 2 and 3 a 4-byte one.
  size_t prefix = major == 1 ? 10 : 12;
  if (size < prefix) throw bad("truncated .npy file (" + std::to_string(size) + " bytes)");
  uint64_t header_len = read_le(pre + 8, major == 1 ? 2 : 4);
  if (prefix + header_len > size)
    throw bad("truncated .npy file: header of " + std::to_string(header_len) +
              " bytes runs past the end of the file");
  std::string header(header_len, '\0');
  in.seekg(static_cast<std::streamoff>(prefix));
  in.read(header.data(), static_cast<std::streamsize>(header_len));
  NpyHeader h = HeaderParser(header, path).parse();

  int64_t nbytes = detail::checked_nbytes(h.dims, dtype_size(h.dtype));
  if (nbytes < 0) throw bad("shape " + Shape(h.dims).to_string() + " is absurdly large");
  uint64_t have = size - prefix - header_len;
  if (have != static_cast<uint64_t>(nbytes))
    throw bad((have < static_cast<uint64_t>(nbytes) ? "truncated .npy file: " : "") +
              std::string("the data is ") + std::to_string(have) + " bytes, but shape " +
              Shape(h.dims).to_string() + " " + dtype_name(h.dtype) + " needs " +
              std::to_string(nbytes));
  Tensor t(h.dtype, Shape(h.dims));
  in.read(static_cast<char*>(t.raw()), nbytes);
  if (!in) throw bad("cannot read the data");
  return t;
}

void save_npy(const Tensor& t, const std::string& path) {
  check(t.defined() && t.device().is_cpu(), ErrorCode::InvalidArgument,
        "save_npy '" + path + "': only defined CPU tensors can be saved");
  std::string shape = "(";  // a Python tuple: "()", "(3,)", "(2, 3)"
  for (size_t i = 0; i < t.rank(); ++i) shape += (i ? ", " : "") + std::to_string(t.dim(i));
  shape += t.rank() == 1 ? ",)" : ")";
  std::string header = std::string("{'descr': '") + descr_of(t.dtype()) +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces so the data starts on a 64-byte boundary; the header ends with '\n'.
  bool v2 = header.size() + 11 > 65535;
  size_t prefix = v2 ? 12 : 10;
  size_t total = (prefix + header.size() + 1 + 63) / 64 * 64;
  header.append(total - prefix - header.size() - 1, ' ');
  header += '\n';

  std::string bytes(kMagic, kMagicLen);
  bytes += static_cast<char>(v2 ? 2 : 1);
  bytes += '\0';
  uint32_t len = static_cast<uint32_t>(header.size());
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i) bytes += static_cast<char>((len >> (8 * i)) & 0xff);
  bytes += header;
  bytes.append(static_cast<const char*>(t.raw()), t.nbytes());
  detail::write_file(path, bytes, ".npy file");
}

}  // namespace minfer
