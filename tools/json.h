// A tiny JSON value for --json output: built in code, printed once. Objects keep insertion
// order so the output reads in the same order as the human-readable form. Strings are
// escaped by runtime/json.h, which also has the parser that the tests read this output with.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace minfer::cli {

class Json {
 public:
  enum class Kind { Null, Bool, Int, Number, String, Array, Object };

  Json() = default;
  Json(bool b) : kind_(Kind::Bool), bool_(b) {}
  Json(int v) : kind_(Kind::Int), int_(v) {}
  Json(long v) : kind_(Kind::Int), int_(v) {}
  Json(long long v) : kind_(Kind::Int), int_(v) {}
  Json(unsigned long v) : kind_(Kind::Int), int_(static_cast<int64_t>(v)) {}
  Json(unsigned long long v) : kind_(Kind::Int), int_(static_cast<int64_t>(v)) {}
  Json(double v) : kind_(Kind::Number), number_(v) {}
  Json(float v) : kind_(Kind::Number), number_(v) {}
  Json(const char* s) : kind_(Kind::String), string_(s) {}
  Json(std::string s) : kind_(Kind::String), string_(std::move(s)) {}

  static Json array() {
    Json j;
    j.kind_ = Kind::Array;
    return j;
  }
  static Json object() {
    Json j;
    j.kind_ = Kind::Object;
    return j;
  }
  template <typename T>
  static Json array_of(const std::vector<T>& values) {
    Json j = array();
    for (const T& v : values) j.push(Json(v));
    return j;
  }

  Json& push(Json v);                         // arrays
  Json& set(const std::string& key, Json v);  // objects (replaces an existing key)
  Kind kind() const { return kind_; }

  // Compact when indent < 0, else pretty-printed with `indent` spaces.
  std::string dump(int indent = 2) const;

 private:
  void write(std::string& out, int indent, int depth) const;
  bool all_scalars() const;

  Kind kind_ = Kind::Null;
  bool bool_ = false;
  int64_t int_ = 0;
  double number_ = 0;
  std::string string_;
  std::vector<Json> items_;
  std::vector<std::pair<std::string, Json>> members_;
};

}  // namespace minfer::cli
