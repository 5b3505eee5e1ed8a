// A small JSON reader and writer (RFC 8259), enough for safetensors headers and the CLI's
// --json output. Private to the library and its tools; not a general-purpose JSON library.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace minfer::json {

// A parsed JSON value. Numbers that are integers in the text keep their exact int64 value.
struct Value {
  enum class Type { Null, Bool, Number, String, Array, Object };
  Type type = Type::Null;
  bool boolean = false;
  double number = 0;        // every number
  bool is_integer = false;  // the text was an integer that fits int64_t
  int64_t integer = 0;      // valid when is_integer
  std::string string;
  std::vector<Value> array;
  std::vector<std::pair<std::string, Value>> object;  // in file order; keys are unique

  bool is_null() const { return type == Type::Null; }
  bool is_string() const { return type == Type::String; }
  bool is_array() const { return type == Type::Array; }
  bool is_object() const { return type == Type::Object; }
  // The member named `key` of an object, or null if absent (or not an object).
  const Value* find(std::string_view key) const;

  // Declared here, defined once Value is complete: `object` holds pairs of Value, which
  // libstdc++'s pair traits need complete (clang rejects the implicit members otherwise).
  Value();
  Value(const Value&);
  Value(Value&&) noexcept;
  Value& operator=(const Value&);
  Value& operator=(Value&&) noexcept;
  ~Value();
};

inline Value::Value() = default;
inline Value::Value(const Value&) = default;
inline Value::Value(Value&&) noexcept = default;
inline Value& Value::operator=(const Value&) = default;
inline Value& Value::operator=(Value&&) noexcept = default;
inline Value::~Value() = default;

const char* type_name(Value::Type t);  // "object", "string", ...

// Parses one JSON document (surrounding whitespace allowed). Throws minfer::Error
// (InvalidArgument) with "JSON: <what> at offset N"; callers add the file name.
Value parse(std::string_view text);

// `s` as a JSON string literal, quotes included.
std::string quote(std::string_view s);

// Streams JSON text; inserts commas and colons itself. Pretty-prints with `indent` > 0.
//   Writer w; w.begin_object().key("n").value(3).key("xs").begin_array().value(1.5).end_array()
//    .end_object(); w.str() == R"({"n":3,"xs":[1.5]})"
class Writer {
 public:
  explicit Writer(int indent = 0) : indent_(indent) {}

  Writer& begin_object() { return open('{'); }
  Writer& end_object() { return close('}'); }
  Writer& begin_array() { return open('['); }
  Writer& end_array() { return close(']'); }
  Writer& key(std::string_view k);
  Writer& value(std::string_view s);
  Writer& value(const char* s) { return value(std::string_view(s)); }
  Writer& value(const std::string& s) { return value(std::string_view(s)); }
  Writer& value(bool b);
  Writer& value(int64_t i);
  Writer& value(int i) { return value(static_cast<int64_t>(i)); }
  Writer& value(uint64_t u);
  Writer& value(double d);  // NaN and infinities become null (JSON has no such numbers)
  Writer& null();

  const std::string& str() const { return out_; }

 private:
  Writer& open(char c);
  Writer& close(char c);
  void before_value();
  void newline();

  std::string out_;
  int indent_;
  std::vector<bool> first_;  // per open container: nothing written in it yet
  bool after_key_ = false;
};

}  // namespace minfer::json
