#include "io_test_util.h"
#include "runtime/json.h"

using namespace minfer;
using namespace minfer::test;

TEST_CASE("json: parses objects, arrays, strings, numbers, literals", "[io]") {
  json::Value v = json::parse(
      R"( {"a": [1, -2, 3.5, 1e3, 9223372036854775807, 12345678901234567890],
          "s": "q\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00", "t": true, "f": false, "n": null,
          "o": {}, "e": []} )");
  REQUIRE(v.is_object());
  REQUIRE(v.object.size() == 7);
  CHECK(v.object[0].first == "a");  // file order is kept
  const json::Value& a = *v.find("a");
  REQUIRE(a.array.size() == 6);
  CHECK((a.array[0].is_integer && a.array[0].integer == 1));
  CHECK((a.array[1].is_integer && a.array[1].integer == -2));
  CHECK((!a.array[2].is_integer && a.array[2].number == 3.5));
  CHECK((!a.array[3].is_integer && a.array[3].number == 1000.0));
  CHECK(a.array[4].integer == INT64_MAX);
  CHECK(!a.array[5].is_integer);  // too large for int64: kept as a double
  CHECK(a.array[5].number == 12345678901234567890.0);
  CHECK(v.find("s")->string == "q\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80");
  CHECK((v.find("t")->type == json::Value::Type::Bool && v.find("t")->boolean));
  CHECK((v.find("f")->type == json::Value::Type::Bool && !v.find("f")->boolean));
  CHECK(v.find("n")->is_null());
  CHECK(v.find("o")->is_object());
  CHECK(v.find("e")->is_array());
  CHECK(v.find("missing") == nullptr);
}

TEST_CASE("json: malformed input is refused with the offset", "[io]") {
  auto bad = [](const std::string& text, const std::string& what) {
    INFO(text);
    require_error([&] { json::parse(text); }, ErrorCode::InvalidArgument, {"JSON", what});
  };
  bad("", "unexpected end");
  bad("{", "expected a string key");
  bad("{\"a\" 1}", "expected ':'");
  bad("{\"a\":1,}", "expected a string key");
  bad("[1,]", "unexpected character ']'");
  bad("[1 2]", "expected ']'");
  bad("\"abc", "unterminated string");
  bad("\"a\nb\"", "control character");
  bad("\"\\x\"", "bad escape");
  bad("\"\\u12\"", "\\u escape");
  bad("\"\\ud800\"", "unpaired surrogate");
  bad("01", "unexpected text after the value");
  bad("-", "malformed number");
  bad("1.", "malformed number");
  bad("1e", "malformed number");
  bad("tru", "unexpected character 't'");
  bad("{} x", "offset 3");
  bad("{\"k\":1,\"k\":2}", "duplicate key");
  bad(std::string(1000, '['), "nesting too deep");
}

TEST_CASE("json: the writer produces valid, parseable JSON", "[io]") {
  json::Writer w;
  // clang-format off
  w.begin_object()
      .key("name").value("a \"b\"\n\x01")
      .key("n").value(int64_t{-3})
      .key("u").value(uint64_t{18446744073709551615ull})
      .key("x").value(0.1)
      .key("nan").value(std::nan(""))
      .key("ok").value(true)
      .key("none").null()
      .key("list").begin_array().value(1).value(2.5).begin_object().end_object().end_array()
      .key("empty").begin_array().end_array()
      .end_object();
  // clang-format on
  CHECK(w.str() ==
        R"({"name":"a \"b\"\n\u0001","n":-3,"u":18446744073709551615,"x":0.1,"nan":null,)"
        R"("ok":true,"none":null,"list":[1,2.5,{}],"empty":[]})");
  json::Value back = json::parse(w.str());
  CHECK(back.find("name")->string == "a \"b\"\n\x01");
  CHECK(back.find("x")->number == 0.1);

  json::Writer pretty(2);
  pretty.begin_object()
      .key("a")
      .begin_array()
      .value(1)
      .value(2)
      .end_array()
      .key("b")
      .value("c")
      .end_object();
  CHECK(pretty.str() == "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": \"c\"\n}");
  CHECK(json::parse(pretty.str()).find("b")->string == "c");
}
