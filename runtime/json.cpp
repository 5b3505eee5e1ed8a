#include "runtime/json.h"

#include <charconv>
#include <cmath>

#include "minfer/error.h"

namespace minfer::json {

const Value* Value::find(std::string_view key) const {
  for (const auto& [k, v] : object)
    if (k == key) return &v;
  return nullptr;
}

const char* type_name(Value::Type t) {
  switch (t) {
    case Value::Type::Null: return "null";
    case Value::Type::Bool: return "boolean";
    case Value::Type::Number: return "number";
    case Value::Type::String: return "string";
    case Value::Type::Array: return "array";
    case Value::Type::Object: return "object";
  }
  return "?";
}

namespace {

constexpr int kMaxDepth = 128;  // nesting limit: hostile input must not overflow the stack

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  Value document() {
    Value v = value(0);
    skip_space();
    if (pos_ != s_.size()) fail("unexpected text after the value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(ErrorCode::InvalidArgument, "JSON: " + what + " at offset " + std::to_string(pos_));
  }
  void skip_space() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }
  bool consume(char c) {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!consume(c)) fail(std::string("expected '") + c + "'");
  }
  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Value value(int depth) {
    if (depth > kMaxDepth) fail("nesting too deep");
    skip_space();
    if (pos_ >= s_.size()) fail("unexpected end of input");
    Value v;
    char c = s_[pos_];
    if (c == '{') {
      v.type = Value::Type::Object;
      ++pos_;
      if (consume('}')) return v;
      do {
        skip_space();
        if (pos_ >= s_.size() || s_[pos_] != '"') fail("expected a string key");
        std::string k = string();
        if (v.find(k)) fail("duplicate key \"" + k + "\"");
        expect(':');
        v.object.emplace_back(std::move(k), value(depth + 1));
      } while (consume(','));
      expect('}');
    } else if (c == '[') {
      v.type = Value::Type::Array;
      ++pos_;
      if (consume(']')) return v;
      do v.array.push_back(value(depth + 1));
      while (consume(','));
      expect(']');
    } else if (c == '"') {
      v.type = Value::Type::String;
      v.string = string();
    } else if (literal("true")) {
      v.type = Value::Type::Bool;
      v.boolean = true;
    } else if (literal("false")) {
      v.type = Value::Type::Bool;
    } else if (literal("null")) {
      v.type = Value::Type::Null;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      number(v);
    } else {
      fail(std::string("unexpected character '") + c + "'");
    }
    return v;
  }

  void number(Value& v) {
    size_t start = pos_;
    auto digits = [&] {
      size_t d = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      if (pos_ == d) fail("malformed number");
    };
    if (s_[pos_] == '-') ++pos_;
    if (pos_ < s_.size() && s_[pos_] == '0')
      ++pos_;  // no leading zeros
    else
      digits();
    bool integral = true;
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      digits();
      integral = false;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      digits();
      integral = false;
    }
    const char* b = s_.data() + start;
    const char* e = s_.data() + pos_;
    v.type = Value::Type::Number;
    if (integral) {
      auto [p, ec] = std::from_chars(b, e, v.integer);
      v.is_integer = ec == std::errc() && p == e;
    }
    auto [p, ec] = std::from_chars(b, e, v.number);
    if (ec == std::errc::result_out_of_range)
      v.number = (*b == '-') ? -HUGE_VAL : HUGE_VAL;
    else if (ec != std::errc() || p != e)
      fail("malformed number");
  }

  unsigned hex4() {
    if (pos_ + 4 > s_.size()) fail("truncated \\u escape");
    unsigned u = 0;
    auto [p, ec] = std::from_chars(s_.data() + pos_, s_.data() + pos_ + 4, u, 16);
    if (ec != std::errc() || p != s_.data() + pos_ + 4) fail("bad \\u escape");
    pos_ += 4;
    return u;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  std::string string() {
    ++pos_;  // the opening quote
    std::string out;
    for (;;) {
      if (pos_ >= s_.size()) fail("unterminated string");
      char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) fail("unterminated string");
      char e = s_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {  // a surrogate pair encodes one code point
            if (!literal("\\u")) fail("unpaired surrogate");
            unsigned lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) fail("unpaired surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            fail("unpaired surrogate");
          }
          append_utf8(out, cp);
          break;
        }
        default: fail(std::string("bad escape '\\") + e + "'");
      }
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

Value parse(std::string_view text) { return Parser(text).document(); }

std::string quote(std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += "\\u00";
          out += kHex[(c >> 4) & 0xF];
          out += kHex[c & 0xF];
        } else {
          out += c;  // UTF-8 passes through unchanged
        }
    }
  }
  return out + "\"";
}

// ---- Writer --------------------------------------------------------------------------------

void Writer::newline() {
  if (indent_ <= 0) return;
  out_ += '\n';
  out_.append(first_.size() * static_cast<size_t>(indent_), ' ');
}

void Writer::before_value() {
  if (after_key_) {  // the key wrote the separator already
    after_key_ = false;
    return;
  }
  if (first_.empty()) return;  // the top-level value
  if (!first_.back()) out_ += ',';
  first_.back() = false;
  newline();
}

Writer& Writer::open(char c) {
  before_value();
  out_ += c;
  first_.push_back(true);
  return *this;
}

Writer& Writer::close(char c) {
  bool empty = first_.empty() || first_.back();
  if (!first_.empty()) first_.pop_back();
  if (!empty) newline();
  out_ += c;
  return *this;
}

Writer& Writer::key(std::string_view k) {
  before_value();
  out_ += quote(k);
  out_ += indent_ > 0 ? ": " : ":";
  after_key_ = true;
  return *this;
}

Writer& Writer::value(std::string_view s) {
  before_value();
  out_ += quote(s);
  return *this;
}

Writer& Writer::value(bool b) {
  before_value();
  out_ += b ? "true" : "false";
  return *this;
}

Writer& Writer::value(int64_t i) {
  before_value();
  out_ += std::to_string(i);
  return *this;
}

Writer& Writer::value(uint64_t u) {
  before_value();
  out_ += std::to_string(u);
  return *this;
}

Writer& Writer::value(double d) {
  if (!std::isfinite(d)) return null();
  before_value();
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d);  // shortest round-trip form
  out_.append(buf, ec == std::errc() ? end : buf);
  return *this;
}

Writer& Writer::null() {
  before_value();
  out_ += "null";
  return *this;
}

}  // namespace minfer::json
