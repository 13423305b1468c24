// Values of the template language: the part of Python's data model that chat templates use.
// Lists and dicts are immutable once built (transformers renders in an ImmutableSandboxed-
// Environment, where list.append and friends are refused), so they are shared, not copied.
// Namespaces, macros and loop state are Objects: the only things with identity or behaviour.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace kiln::jinja {

class Value;
class Evaluator;
struct List;
struct Dict;
class Object;
using ListPtr = std::shared_ptr<const List>;
using DictPtr = std::shared_ptr<const Dict>;
using ObjectPtr = std::shared_ptr<Object>;

// Bounds nesting so that recursive walks (printing, JSON, equality, destruction) cannot exhaust
// the stack whatever a template builds.
inline constexpr int kMaxValueDepth = 200;

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kObject };

  Value() = default;  // undefined
  static Value Undefined(std::string hint = {});
  static Value None() { return Value(NoneTag{}); }
  static Value Bool(bool b) { return Value(b); }
  static Value Int(int64_t i) { return Value(i); }
  static Value Float(double d) { return Value(d); }
  static Value Str(std::string s) { return Value(std::move(s)); }
  static Value MakeList(std::vector<Value> items, bool tuple = false);
  static Value MakeDict(std::vector<std::pair<std::string, Value>> items);
  static Value Obj(ObjectPtr o) { return Value(std::move(o)); }

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_list() const { return kind() == Kind::kList; }  // lists and tuples
  bool is_dict() const { return kind() == Kind::kDict; }
  bool is_object() const { return kind() == Kind::kObject; }
  bool is_number() const { return is_bool() || is_int() || is_float(); }  // bool is an int
  bool is_integral() const { return is_bool() || is_int(); }
  bool is_tuple() const;

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const { return is_bool() ? std::get<bool>(v_) : std::get<int64_t>(v_); }
  double as_float() const { return is_float() ? std::get<double>(v_) : double(as_int()); }
  const std::string& as_string() const { return std::get<std::string>(v_); }
  const List& list() const { return *std::get<ListPtr>(v_); }
  const ListPtr& list_ptr() const { return std::get<ListPtr>(v_); }
  const Dict& dict() const { return *std::get<DictPtr>(v_); }
  Object& object() const { return *std::get<ObjectPtr>(v_); }
  const ObjectPtr& object_ptr() const { return std::get<ObjectPtr>(v_); }
  const std::string& undefined_hint() const;  // why it is undefined, for error messages
  int depth() const;                          // nesting level of lists, dicts and objects

  bool Truthy() const;           // Python bool()
  std::string TypeName() const;  // Python type(x).__name__, for messages
  std::string Str() const;       // Python str(); undefined prints as ''
  std::string Repr() const;      // Python repr()

 private:
  struct NoneTag {};
  struct UndefinedTag {
    std::shared_ptr<const std::string> hint;
  };
  template <typename T>
  explicit Value(T v) : v_(std::move(v)) {}

  std::variant<UndefinedTag, NoneTag, bool, int64_t, double, std::string, ListPtr, DictPtr,
               ObjectPtr>
      v_;
};

struct List {
  std::vector<Value> items;
  bool tuple = false;
  int depth = 1;
};

struct Dict {
  std::vector<std::pair<std::string, Value>> items;  // in insertion order, as Python's dict
  int depth = 1;
  const Value* Find(std::string_view key) const;
};

// Host-side behaviour: namespace(), macros, loop, bound methods, global functions.
class Object {
 public:
  virtual ~Object() = default;
  virtual std::string TypeName() const = 0;
  virtual Value GetAttr(std::string_view name) const;  // undefined when absent
  virtual bool IsCallable() const { return false; }
  virtual Value Call(Evaluator& ev, CallArgs args);
  // Python str(); `depth` guards objects that (through namespaces) contain themselves.
  virtual std::string Str(int /*depth*/ = 0) const { return "<" + TypeName() + " object>"; }
  // Drops references to other values, to break cycles when a render ends.
  virtual void Release() {}
};

// Python ==, with bool/int/float comparing numerically and lists/tuples never equal.
bool Equals(const Value& a, const Value& b, int depth = 0);
// Python <; throws for unorderable types.
bool Less(const Value& a, const Value& b, int depth = 0);
// Python `needle in haystack`.
bool Contains(const Value& haystack, const Value& needle);
// The items a for loop visits: list items, dict keys, string code points, nothing for undefined.
std::vector<Value> Iterate(const Value& v);
// Python len(); throws for values without a length.
int64_t Length(const Value& v);

}  // namespace kiln::jinja
