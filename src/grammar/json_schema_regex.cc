#include "grammar/json_schema_regex.h"

#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "util/error.h"

namespace kiln::grammar {
namespace {

using json = nlohmann::ordered_json;

const char* const kString = "\"([^\"\\\\\\x00-\\x1F]|\\\\[\"\\\\/bfnrt]|\\\\u[0-9a-fA-F]{4})*\"";
const char* const kChar = "([^\"\\\\\\x00-\\x1F]|\\\\[\"\\\\/bfnrt]|\\\\u[0-9a-fA-F]{4})";
const char* const kNumber = "-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?";
const char* const kInteger = "-?(0|[1-9][0-9]*)";
const char* const kNever = "[\\uD800]";  // a surrogate: matches nothing
const char* const kComma = ", ?";
const char* const kColon = ": ?";

std::string Group(const std::string& r) { return "(" + r + ")"; }

std::string Alternatives(const std::vector<std::string>& options) {
  if (options.empty()) return kNever;
  std::string out;
  for (const std::string& o : options) out += (out.empty() ? "" : "|") + Group(o);
  return Group(out);
}

// Non-negative integers in [lo, hi] written without leading zeros, all of the same length.
std::string SameLength(const std::string& lo, const std::string& hi) {
  if (lo.size() == 1) return StrCat("[", lo, "-", hi, "]");
  // Every suffix from 0...0 to 9...9: one class per leading digit range (keeps this linear).
  if (lo.find_first_not_of('0', 1) == std::string::npos &&
      hi.find_first_not_of('9', 1) == std::string::npos) {
    return StrCat("[", std::string(1, lo[0]), "-", std::string(1, hi[0]), "][0-9]{", lo.size() - 1,
                  "}");
  }
  if (lo[0] == hi[0]) return std::string(1, lo[0]) + SameLength(lo.substr(1), hi.substr(1));
  const size_t rest = lo.size() - 1;
  const std::string zeros(rest, '0'), nines(rest, '9');
  std::vector<std::string> parts;
  parts.push_back(std::string(1, lo[0]) + SameLength(lo.substr(1), nines));
  if (hi[0] - lo[0] > 1) {
    parts.push_back(StrCat("[", std::string(1, lo[0] + 1), "-", std::string(1, hi[0] - 1),
                           "][0-9]{", rest, "}"));
  }
  parts.push_back(std::string(1, hi[0]) + SameLength(zeros, hi.substr(1)));
  return Alternatives(parts);
}

// Non-negative integers in [lo, hi]; hi < 0: no upper bound.
std::string NonNegativeRange(int64_t lo, int64_t hi) {
  std::vector<std::string> parts;
  std::string a = std::to_string(lo);
  // Unbounded: the lengths past lo's are `[1-9][0-9]{len,}` below.
  const size_t max_len = hi < 0 ? a.size() : std::to_string(hi).size();
  for (size_t len = a.size(); len <= max_len; ++len) {
    const std::string first = len == a.size() ? a : "1" + std::string(len - 1, '0');
    std::string last = std::string(len, '9');
    if (hi >= 0 && len == max_len) last = std::to_string(hi);
    if (len == 1 && first == "0" && last == "9") {
      parts.push_back("[0-9]");
    } else {
      parts.push_back(SameLength(first, last));
    }
  }
  if (hi < 0) parts.push_back(StrCat("[1-9][0-9]{", a.size(), ",}"));
  return Alternatives(parts);
}

std::string IntegerRange(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  if (lo && hi && *lo > *hi) throw Error("`minimum` is above `maximum`");
  std::vector<std::string> parts;
  if (!hi || *hi >= 0)
    parts.push_back(NonNegativeRange(lo ? std::max<int64_t>(*lo, 0) : 0, hi ? *hi : -1));
  if (!lo || *lo < 0) {
    const int64_t abs_lo = hi && *hi < 0 ? -*hi : 1;
    parts.push_back("-" + NonNegativeRange(abs_lo, lo ? -*lo : -1));
  }
  return Alternatives(parts);
}

std::string StringFormat(const std::string& format) {
  const std::string date = "[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])";
  const std::string time =
      "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])";
  const std::string octet = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
  if (format == "date") return date;
  if (format == "time") return time;
  if (format == "date-time") return date + "T" + time;
  if (format == "uuid") {
    return "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";
  }
  if (format == "email")
    return "[a-zA-Z0-9_.+-]{1,64}@[a-zA-Z0-9-]{1,63}(\\.[a-zA-Z0-9-]{1,63}){1,3}";
  if (format == "ipv4") return octet + "\\." + octet + "\\." + octet + "\\." + octet;
  return "";
}

class SchemaCompiler {
 public:
  SchemaCompiler(const json& root, const JsonSchemaOptions& o) : root_(root), o_(o) {}

  std::string Compile(const json& s, const std::string& path) {
    if (++depth_ > 64) throw Error(StrCat("JSON schema nested too deeply at ", path));
    std::string out = CompileInner(s, path);
    --depth_;
    return out;
  }

  std::string Generic(int depth) const {
    std::string v = Alternatives({kString, kNumber, "true", "false", "null"});
    for (int d = 0; d < depth; ++d) {
      const std::string member = std::string(kString) + kColon + v;
      v = Alternatives({kString, kNumber, "true", "false", "null",
                        "\\{(" + member + "(" + kComma + member + ")*)?\\}",
                        "\\[(" + v + "(" + kComma + v + ")*)?\\]"});
    }
    return v;
  }

 private:
  [[noreturn]] static void Unsupported(const std::string& what, const std::string& path) {
    throw Error(
        StrCat("unsupported JSON schema construct at ", path.empty() ? "/" : path, ": ", what));
  }

  std::string CompileInner(const json& s, const std::string& path) {
    if (s.is_boolean()) return s.get<bool>() ? Generic(o_.generic_depth) : kNever;
    if (!s.is_object()) throw Error(StrCat("JSON schema at ", path, " is not an object"));
    for (const char* k : {"not", "if", "then", "else", "patternProperties", "multipleOf",
                          "dependentSchemas", "contains", "propertyNames", "unevaluatedProperties",
                          "unevaluatedItems", "$dynamicRef"}) {
      if (s.contains(k)) Unsupported(StrCat("`", k, "`"), path);
    }
    if (s.contains("$ref")) return Ref(s["$ref"], path);
    if (s.contains("const")) return RegexLiteral(s["const"].dump());
    if (s.contains("enum")) {
      if (!s["enum"].is_array()) throw Error(StrCat("`enum` at ", path, " is not an array"));
      std::vector<std::string> options;
      for (const json& v : s["enum"]) options.push_back(RegexLiteral(v.dump()));
      return Alternatives(options);
    }
    for (const char* k : {"anyOf", "oneOf"}) {
      if (!s.contains(k)) continue;
      if (!s[k].is_array()) throw Error(StrCat("`", k, "` at ", path, " is not an array"));
      std::vector<std::string> options;
      for (size_t i = 0; i < s[k].size(); ++i) {
        options.push_back(Compile(s[k][i], StrCat(path, "/", k, "/", i)));
      }
      return Alternatives(options);
    }
    if (s.contains("allOf")) {
      if (!s["allOf"].is_array() || s["allOf"].size() != 1) {
        Unsupported("`allOf` with more than one schema", path);
      }
      return Compile(s["allOf"][0], path + "/allOf/0");
    }
    if (!s.contains("type")) {
      if (s.contains("properties")) return Object(s, path);
      if (s.contains("items") || s.contains("prefixItems")) return Array(s, path);
      return Generic(o_.generic_depth);
    }
    const json& type = s["type"];
    if (type.is_array()) {
      std::vector<std::string> options;
      for (const json& t : type) options.push_back(Typed(s, t, path));
      return Alternatives(options);
    }
    return Typed(s, type, path);
  }

  std::string Typed(const json& s, const json& type, const std::string& path) {
    if (!type.is_string()) throw Error(StrCat("`type` at ", path, " is not a string"));
    const std::string t = type.get<std::string>();
    if (t == "string") return String(s, path);
    if (t == "integer") return Integer(s, path);
    if (t == "number") {
      for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
        if (s.contains(k)) return Integer(s, path);  // bounded: integers in the range
      }
      return kNumber;
    }
    if (t == "boolean") return "(true|false)";
    if (t == "null") return "null";
    if (t == "object") return Object(s, path);
    if (t == "array") return Array(s, path);
    throw Error(StrCat("unknown JSON schema type `", t, "` at ", path));
  }

  static std::optional<int64_t> Bound(const json& s, const char* inclusive, const char* exclusive,
                                      int64_t step) {
    std::optional<int64_t> out;
    auto integer = [](const json& v, bool up) {
      const double d = v.get<double>();
      if (d > 9e18 || d < -9e18) throw Error("a numeric bound is out of range");
      return static_cast<int64_t>(up ? std::ceil(d) : std::floor(d));
    };
    if (s.contains(inclusive) && s[inclusive].is_number()) {
      out = integer(s[inclusive], step > 0);
    }
    if (s.contains(exclusive) && s[exclusive].is_number()) {
      const double d = s[exclusive].get<double>();
      int64_t v = integer(s[exclusive], step > 0);
      if (static_cast<double>(v) == d) v += step;
      out = out ? (step > 0 ? std::max(*out, v) : std::min(*out, v)) : v;
    }
    return out;
  }

  std::string Integer(const json& s, const std::string& path) {
    const auto lo = Bound(s, "minimum", "exclusiveMinimum", 1);
    const auto hi = Bound(s, "maximum", "exclusiveMaximum", -1);
    if (!lo && !hi) return kInteger;
    try {
      return IntegerRange(lo, hi);
    } catch (const Error& e) {
      throw Error(StrCat("JSON schema at ", path, ": ", e.what()));
    }
  }

  std::string String(const json& s, const std::string& path) {
    if (s.contains("pattern")) {
      if (!s["pattern"].is_string()) throw Error(StrCat("`pattern` at ", path, " is not a string"));
      std::string p = s["pattern"].get<std::string>();
      // JSON schema patterns search; anchors make them match the whole string.
      const bool head = !p.empty() && p.front() == '^';
      const bool tail = !p.empty() && p.back() == '$' && (p.size() < 2 || p[p.size() - 2] != '\\');
      if (head) p.erase(0, 1);
      if (tail) p.pop_back();
      return StrCat("\"", head ? "" : StrCat(kChar, "*"), "(", p, ")",
                    tail ? "" : StrCat(kChar, "*"), "\"");
    }
    if (s.contains("format") && s["format"].is_string()) {
      const std::string f = StringFormat(s["format"].get<std::string>());
      if (!f.empty()) return "\"" + f + "\"";
    }
    const int64_t min = s.value("minLength", 0);
    const int64_t max = s.contains("maxLength") ? s["maxLength"].get<int64_t>() : -1;
    if (min < 0 || (max >= 0 && max < min) || min > 10000 || max > 10000) {
      throw Error(StrCat("`minLength` / `maxLength` at ", path, " out of range (0 to 10000)"));
    }
    if (min == 0 && max < 0) return kString;
    return StrCat("\"", kChar, "{", min, ",", max < 0 ? "" : std::to_string(max), "}\"");
  }

  std::string Array(const json& s, const std::string& path) {
    std::vector<std::string> fixed;
    if (s.contains("prefixItems")) {
      for (size_t i = 0; i < s["prefixItems"].size(); ++i) {
        fixed.push_back(Compile(s["prefixItems"][i], StrCat(path, "/prefixItems/", i)));
      }
    }
    const bool no_more = s.contains("items") && s["items"].is_boolean() && !s["items"].get<bool>();
    const std::string item = s.contains("items") && !no_more ? Compile(s["items"], path + "/items")
                                                             : Generic(o_.generic_depth - 1);
    const int64_t min = s.value("minItems", 0);
    const int64_t max = s.contains("maxItems") ? s["maxItems"].get<int64_t>()
                        : no_more              ? static_cast<int64_t>(fixed.size())
                                               : -1;
    if (min < 0 || (max >= 0 && max < min) || min > 1000 || max > 1000) {
      throw Error(StrCat("`minItems` / `maxItems` at ", path, " out of range (0 to 1000)"));
    }
    // Items beyond the prefix: between min - prefix and max - prefix of them.
    std::string body;
    for (size_t i = 0; i < fixed.size(); ++i) body += (i ? kComma : "") + Group(fixed[i]);
    const int64_t n = static_cast<int64_t>(fixed.size());
    const int64_t more_min = std::max<int64_t>(min - n, 0);
    const int64_t more_max = max < 0 ? -1 : std::max<int64_t>(max - n, 0);
    if (more_max != 0) {
      if (n > 0) {
        body += StrCat("(", kComma, Group(item), "){", more_min, ",",
                       more_max < 0 ? "" : std::to_string(more_max), "}");
      } else {
        const std::string rest =
            StrCat("(", kComma, Group(item), "){", std::max<int64_t>(more_min - 1, 0), ",",
                   more_max < 0 ? "" : std::to_string(more_max - 1), "}");
        body = Group(item) + rest;
        if (more_min == 0) body = "(" + body + ")?";
      }
    } else if (n < min) {
      return kNever;
    }
    return "\\[" + body + "\\]";
  }

  std::string Object(const json& s, const std::string& path) {
    const json empty = json::object();
    const json& props = s.contains("properties") ? s["properties"] : empty;
    if (!props.is_object()) throw Error(StrCat("`properties` at ", path, " is not an object"));
    std::set<std::string> required;
    if (s.contains("required")) {
      for (const json& r : s["required"]) {
        if (!r.is_string()) throw Error(StrCat("`required` at ", path, " lists a non-string"));
        if (!props.contains(r.get<std::string>())) {
          Unsupported(
              StrCat("required property `", r.get<std::string>(), "` is not in `properties`"),
              path);
        }
        required.insert(r.get<std::string>());
      }
    }
    const json* extra = s.contains("additionalProperties") ? &s["additionalProperties"] : nullptr;
    std::string extra_member;
    if (props.empty() && extra == nullptr) {
      extra_member = std::string(kString) + kColon + Generic(o_.generic_depth - 1);
    } else if (extra != nullptr && !(extra->is_boolean() && !extra->get<bool>())) {
      extra_member =
          std::string(kString) + kColon + Compile(*extra, path + "/additionalProperties");
    }
    std::vector<std::string> members;
    std::vector<bool> needed;
    for (auto it = props.begin(); it != props.end(); ++it) {
      members.push_back(RegexLiteral(json(it.key()).dump()) + kColon +
                        Compile(it.value(), path + "/properties/" + it.key()));
      needed.push_back(required.count(it.key()) != 0);
    }
    // after[i]: members i.. once one member is written (each needs a comma before it);
    // first[i]: members i.. when none is written yet.
    const size_t n = members.size();
    std::vector<std::string> after(n + 1), first(n + 1);
    after[n] = extra_member.empty() ? "" : StrCat("(", kComma, Group(extra_member), ")*");
    first[n] = extra_member.empty()
                   ? ""
                   : StrCat("(", Group(extra_member), "(", kComma, Group(extra_member), ")*)?");
    for (size_t i = n; i-- > 0;) {
      const std::string with = StrCat(kComma, Group(members[i]));
      after[i] = needed[i] ? with + after[i + 1] : "(" + with + ")?" + after[i + 1];
      const std::string start = Group(members[i]) + after[i + 1];
      first[i] = needed[i] ? start : Alternatives({start, first[i + 1]});
      if (first[i].size() > 2000000) Unsupported("too many optional properties", path);
    }
    return "\\{" + first[0] + "\\}";
  }

  std::string Ref(const json& ref, const std::string& path) {
    if (!ref.is_string()) throw Error(StrCat("`$ref` at ", path, " is not a string"));
    const std::string r = ref.get<std::string>();
    if (r.empty() || r[0] != '#') Unsupported(StrCat("remote `$ref` \"", r, "\""), path);
    const json* target = nullptr;
    try {
      target = &root_.at(json::json_pointer(r.substr(1)));
    } catch (const std::exception&) {
      throw Error(StrCat("`$ref` \"", r, "\" at ", path, " points at nothing"));
    }
    int& active = active_refs_[r];
    if (active >= o_.max_ref_depth) return kNever;  // recursion unrolled this far
    ++active;
    std::string out = Compile(*target, r);
    --active;
    return out;
  }

  const json& root_;
  JsonSchemaOptions o_;
  int depth_ = 0;
  std::map<std::string, int> active_refs_;
};

}  // namespace

std::string RegexLiteral(std::string_view text) {
  std::string out;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x80 && !std::isalnum(u) && c != '_' && c != ' ') out += '\\';
    out += c;
  }
  return out;
}

std::string JsonSchemaToRegex(const nlohmann::ordered_json& schema,
                              const JsonSchemaOptions& options) {
  try {
    return SchemaCompiler(schema, options).Compile(schema, "");
  } catch (const json::exception& e) {
    throw Error(StrCat("invalid JSON schema: ", e.what()));
  }
}

}  // namespace kiln::grammar
