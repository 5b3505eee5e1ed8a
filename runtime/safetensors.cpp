// safetensors (https://github.com/huggingface/safetensors): an 8-byte little-endian header
// length N, N bytes of JSON {"name": {"dtype", "shape", "data_offsets": [begin, end]}, ...},
// then the data; offsets are relative to the end of the header.
#include <algorithm>

#include "minfer/io.h"
#include "runtime/file_util.h"
#include "runtime/json.h"

namespace minfer {

namespace {

constexpr uint64_t kMaxHeaderBytes = 100 << 20;  // the reference implementation's limit

struct Entry {
  std::string name;
  DType dtype;
  std::vector<int64_t> dims;
  uint64_t begin, end;
};

const char* st_dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "F32";
    case DType::f16: return "F16";
    case DType::i8: return "I8";
    case DType::u8: return "U8";
    case DType::i32: return "I32";
    case DType::i64: return "I64";
    case DType::boolean: return "BOOL";
  }
  return "?";
}

std::string range_text(uint64_t begin, uint64_t end) {
  std::string r = "[";  // built by appending: GCC 12 warns falsely (-Wrestrict) on a + chain
  r += std::to_string(begin);
  r += ", ";
  r += std::to_string(end);
  r += ")";
  return r;
}

class HeaderReader {
 public:
  HeaderReader(const std::string& path, uint64_t data_size) : path_(path), size_(data_size) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(ErrorCode::InvalidModel, "safetensors file '" + path_ + "': " + what);
  }

  Entry entry(const std::string& name, const json::Value& v) const {
    std::string tn = "tensor '" + name + "': ";
    if (!v.is_object()) fail(tn + "expected an object, got " + json::type_name(v.type));
    const json::Value* dt = v.find("dtype");
    const json::Value* shape = v.find("shape");
    const json::Value* offsets = v.find("data_offsets");
    if (!dt || !dt->is_string() || !shape || !shape->is_array() || !offsets || !offsets->is_array())
      fail(tn + "needs \"dtype\" (string), \"shape\" and \"data_offsets\" (arrays)");
    Entry e{name, DType::f32, {}, 0, 0};
    e.dtype = dtype(dt->string, name);
    for (const auto& d : shape->array) e.dims.push_back(non_negative(d, tn + "shape"));
    if (offsets->array.size() != 2) fail(tn + "data_offsets must be [begin, end]");
    e.begin = static_cast<uint64_t>(non_negative(offsets->array[0], tn + "data_offsets"));
    e.end = static_cast<uint64_t>(non_negative(offsets->array[1], tn + "data_offsets"));
    std::string range = range_text(e.begin, e.end);
    if (e.begin > e.end) fail(tn + "data_offsets " + range + " begin after their end");
    if (e.end > size_)
      fail(tn + "data_offsets " + range + " run past the end of the data (" +
           std::to_string(size_) + " bytes; truncated file?)");
    int64_t nbytes = detail::checked_nbytes(e.dims, dtype_size(e.dtype));
    if (nbytes < 0) fail(tn + "shape " + Shape(e.dims).to_string() + " is absurdly large");
    if (e.end - e.begin != static_cast<uint64_t>(nbytes))
      fail(tn + "data_offsets " + range + " hold " + std::to_string(e.end - e.begin) +
           " bytes, but shape " + Shape(e.dims).to_string() + " " + dt->string + " needs " +
           std::to_string(nbytes));
    return e;
  }

 private:
  int64_t non_negative(const json::Value& v, const std::string& what) const {
    if (!v.is_integer || v.integer < 0) fail(what + " must hold non-negative integers");
    return v.integer;
  }

  DType dtype(const std::string& s, const std::string& name) const {
    for (DType t :
         {DType::f32, DType::f16, DType::i8, DType::u8, DType::i32, DType::i64, DType::boolean})
      if (s == st_dtype_name(t)) return t;
    throw Error(ErrorCode::Unsupported,
                "safetensors file '" + path_ + "': tensor '" + name + "' has dtype " + s +
                    ", which is not supported (minfer reads F32 F16 I8 U8 I32 I64 BOOL)");
  }

  const std::string& path_;
  uint64_t size_;
};

}  // namespace

std::map<std::string, Tensor> load_safetensors(const std::string& path) {
  std::ifstream in = detail::open_for_reading(path, "safetensors file");
  uint64_t file_size = detail::stream_size(in);
  auto fail = [&](const std::string& what) {
    return Error(ErrorCode::InvalidModel, "safetensors file '" + path + "': " + what);
  };
  if (file_size < 8)
    throw fail("truncated (" + std::to_string(file_size) + " bytes, no header length)");
  unsigned char len_bytes[8];
  in.read(reinterpret_cast<char*>(len_bytes), 8);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len_bytes[i];
  if (header_len > file_size - 8)
    throw fail("header length " + std::to_string(header_len) + " is larger than the file (" +
               std::to_string(file_size) + " bytes)");
  if (header_len > kMaxHeaderBytes)
    throw fail("header length " + std::to_string(header_len) + " is above the 100 MB limit");

  std::string header(header_len, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_len));
  if (!in) throw fail("cannot read the header");
  json::Value root;
  try {
    root = json::parse(header);
  } catch (const Error& e) {
    throw fail(std::string("bad JSON header: ") + e.what());
  }
  if (!root.is_object()) throw fail("the header is not a JSON object");

  // Validate every entry before allocating anything.
  HeaderReader reader(path, file_size - 8 - header_len);
  std::vector<Entry> entries;
  for (const auto& [name, v] : root.object)
    if (name != "__metadata__") entries.push_back(reader.entry(name, v));
  std::vector<const Entry*> by_offset;
  for (const auto& e : entries) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const Entry* a, const Entry* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < by_offset.size(); ++i)
    if (by_offset[i]->begin < by_offset[i - 1]->end)
      throw fail("tensors '" + by_offset[i - 1]->name + "' and '" + by_offset[i]->name +
                 "' overlap");

  std::map<std::string, Tensor> tensors;
  const uint64_t data_start = 8 + header_len;
  for (const auto& e : entries) {
    Tensor t(e.dtype, Shape(e.dims));
    in.seekg(static_cast<std::streamoff>(data_start + e.begin));
    in.read(static_cast<char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
    if (!in) throw fail("tensor '" + e.name + "': cannot read its data");
    tensors.emplace(e.name, std::move(t));
  }
  return tensors;
}

void save_safetensors(const std::map<std::string, Tensor>& tensors, const std::string& path) {
  json::Writer w;
  w.begin_object();
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    check(t.defined() && t.device().is_cpu(), ErrorCode::InvalidArgument,
          "save_safetensors '" + path + "': tensor '" + name + "' is not a defined CPU tensor");
    w.key(name).begin_object().key("dtype").value(st_dtype_name(t.dtype()));
    w.key("shape").begin_array();
    for (int64_t d : t.shape().dims()) w.value(d);
    w.end_array().key("data_offsets").begin_array().value(offset);
    offset += t.nbytes();
    w.value(offset).end_array().end_object();
  }
  w.end_object();
  std::string header = w.str();
  header.append((8 - header.size() % 8) % 8, ' ');  // keep the data 8-byte aligned

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  check(bool(out), ErrorCode::InvalidArgument, "cannot create safetensors file '" + path + "'");
  char len_bytes[8];
  for (int i = 0; i < 8; ++i) len_bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  out.write(len_bytes, 8);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  for (const auto& [name, t] : tensors)
    out.write(static_cast<const char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
  out.close();
  check(bool(out), ErrorCode::InvalidArgument, "cannot write safetensors file '" + path + "'");
}

}  // namespace minfer
