#include "tokenizer/jinja/pyformat.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/text.h"

namespace kiln::jinja {

std::string FloatRepr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  // Shortest round-trip digits, then CPython's layout: exponent form when the decimal point
  // falls more than 16 places right or 4 places left of the first digit.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string_view sci(buf, res.ptr - buf);
  std::string out;
  if (sci.front() == '-') out += '-', sci.remove_prefix(1);
  size_t e = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e)) {
    if (c != '.') digits += c;
  }
  int exp = 0;
  std::from_chars(sci.data() + e + 1 + (sci[e + 1] == '+'), sci.data() + sci.size(), exp);
  int decpt = exp + 1;
  int n = static_cast<int>(digits.size());
  if (decpt <= -4 || decpt > 16) {
    out += digits[0];
    if (n > 1) out += '.' + digits.substr(1);
    char ebuf[16];
    std::snprintf(ebuf, sizeof(ebuf), "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    return out + ebuf;
  }
  if (decpt <= 0) return out + "0." + std::string(-decpt, '0') + digits;
  if (decpt >= n) return out + digits + std::string(decpt - n, '0') + ".0";
  return out + digits.substr(0, decpt) + "." + digits.substr(decpt);
}

std::string StrRepr(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t c : text::Decode(s)) {
    char buf[16];
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else if (text::IsPrintable(c) && c >= 0x80) {
      text::AppendUtf8(out, c);
    } else {
      if (c >= 0xDC80 && c <= 0xDCFF) {
        std::snprintf(buf, sizeof(buf), "\\udc%02x", static_cast<unsigned>(c & 0xFF));
      } else if (c < 0x100) {
        std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned>(c));
      } else if (c < 0x10000) {
        std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
      } else {
        std::snprintf(buf, sizeof(buf), "\\U%08x", static_cast<unsigned>(c));
      }
      out += buf;
    }
  }
  return out + quote;
}

namespace {

void AppendJsonString(std::string& out, std::string_view s, bool ensure_ascii) {
  out += '"';
  auto hex = [&](unsigned u) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "\\u%04x", u);
    out += buf;
  };
  for (char32_t c : text::Decode(s)) {
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    if (c < 0x20) {
      hex(c);
    } else if (!ensure_ascii || c < 0x7F) {
      text::AppendUtf8(out, c);
    } else if (c < 0x10000) {
      hex(c);
    } else {
      char32_t v = c - 0x10000;
      hex(0xD800 | (v >> 10));
      hex(0xDC00 | (v & 0x3FF));
    }
  }
  out += '"';
}

class JsonWriter {
 public:
  explicit JsonWriter(const JsonOptions& o) : o_(o) {
    item_sep_ = o.item_separator.value_or(o.indent ? "," : ", ");
    key_sep_ = o.key_separator.value_or(": ");
  }

  void Write(const Value& v, int level) {
    if (level > kMaxValueDepth) Fail("value nested too deeply for tojson");
    switch (v.kind()) {
      case Value::Kind::kNone:
        out_ += "null";
        return;
      case Value::Kind::kBool:
        out_ += v.as_bool() ? "true" : "false";
        return;
      case Value::Kind::kInt:
        out_ += std::to_string(v.as_int());
        return;
      case Value::Kind::kFloat:
        WriteFloat(v.as_float());
        return;
      case Value::Kind::kString:
        AppendJsonString(out_, v.as_string(), o_.ensure_ascii);
        return;
      case Value::Kind::kList:
        WriteList(v.list().items, level);
        return;
      case Value::Kind::kDict:
        WriteDict(v.dict(), level);
        return;
      default:
        Fail("Object of type " + v.TypeName() + " is not JSON serializable");
    }
  }

  std::string Take() { return std::move(out_); }

 private:
  void WriteFloat(double d) {
    if (std::isnan(d))
      out_ += "NaN";
    else if (std::isinf(d))
      out_ += d < 0 ? "-Infinity" : "Infinity";
    else
      out_ += FloatRepr(d);
  }

  void Newline(int level) {
    if (!o_.indent) return;
    out_ += '\n';
    for (int i = 0; i < level; ++i) out_ += *o_.indent;
  }

  void WriteList(const std::vector<Value>& items, int level) {
    if (items.empty()) {
      out_ += "[]";
      return;
    }
    out_ += '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out_ += item_sep_;
      Newline(level + 1);
      Write(items[i], level + 1);
    }
    Newline(level);
    out_ += ']';
  }

  void WriteDict(const Dict& dict, int level) {
    if (dict.items.empty()) {
      out_ += "{}";
      return;
    }
    std::vector<const std::pair<std::string, Value>*> items;
    for (const auto& kv : dict.items) items.push_back(&kv);
    if (o_.sort_keys) {
      std::stable_sort(items.begin(), items.end(),
                       [](const auto* a, const auto* b) { return a->first < b->first; });
    }
    out_ += '{';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out_ += item_sep_;
      Newline(level + 1);
      AppendJsonString(out_, items[i]->first, o_.ensure_ascii);
      out_ += key_sep_;
      Write(items[i]->second, level + 1);
    }
    Newline(level);
    out_ += '}';
  }

  const JsonOptions& o_;
  std::string item_sep_, key_sep_;
  std::string out_;
};

}  // namespace

std::string ToJson(const Value& v, const JsonOptions& options) {
  JsonWriter writer(options);
  writer.Write(v, 0);
  return writer.Take();
}

}  // namespace kiln::jinja
