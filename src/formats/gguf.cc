#include "formats/gguf.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "util/error.h"

namespace kiln {

static_assert(std::endian::native == std::endian::little,
              "the GGUF reader assumes a little-endian host");

namespace {

// Smallest encodings, used to reject counts that cannot fit in the bytes left before allocating.
// Key length, 1-byte key, type, u8 value:
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;
// Name length, n_dims, ne[0], type, offset:
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;
constexpr uint32_t kMaxDims = 4;

// Element size in the file of a fixed-size GGUF type; 0 for string/array/unknown.
uint64_t FixedSize(uint32_t type) {
  switch (type) {
    case kGgufUint8:
    case kGgufInt8:
    case kGgufBool:
      return 1;
    case kGgufUint16:
    case kGgufInt16:
      return 2;
    case kGgufUint32:
    case kGgufInt32:
    case kGgufFloat32:
      return 4;
    case kGgufUint64:
    case kGgufInt64:
    case kGgufFloat64:
      return 8;
    default:
      return 0;
  }
}

// Smallest encoding of one value of `type` (its array elements excluded).
uint64_t MinValueBytes(uint32_t type) {
  if (type == kGgufString) return 8;
  if (type == kGgufArray) return 4 + 8;
  return FixedSize(type);
}

// Names of the ggml type ids (ggml.h), to say which unsupported type a tensor uses.
const char* GgmlTypeName(uint32_t id) {
  // clang-format off
  static const char* const kNames[] = {
      "f32", "f16", "q4_0", "q4_1", "(removed q4_2)", "(removed q4_3)", "q5_0", "q5_1", "q8_0",
      "q8_1", "q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "q8_K", "iq2_xxs", "iq2_xs", "iq3_xxs",
      "iq1_s", "iq4_nl", "iq3_s", "iq2_s", "iq4_xs", "i8", "i16", "i32", "i64", "f64", "iq1_m",
      "bf16", "(removed q4_0_4_4)", "(removed q4_0_4_8)", "(removed q4_0_8_8)", "tq1_0", "tq2_0",
      "(removed iq4_nl_4_4)", "(removed iq4_nl_4_8)", "(removed iq4_nl_8_8)", "mxfp4",
  };
  // clang-format on
  return id < std::size(kNames) ? kNames[id] : nullptr;
}

std::string Quote(const std::string& s) { return "'" + s + "'"; }

struct Parsed {
  uint32_t version = 0;
  uint32_t alignment = kGgufDefaultAlignment;
  uint64_t data_offset = 0;
  std::map<std::string, GgufValue> metadata;
  std::vector<TensorView> tensors;
  std::map<std::string, size_t> index;
};

class Parser {
 public:
  Parser(std::string path, const uint8_t* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}

  Parsed Run() {
    Parsed out;
    ReadHeader(out);
    const uint64_t n_tensors = Read<uint64_t>("tensor count");
    const uint64_t n_kv = Read<uint64_t>("metadata key/value count");
    if (n_kv > Remaining() / kMinKvBytes) {
      Fail("metadata key/value count ", n_kv, " cannot fit in the ", Remaining(),
           " bytes remaining (each key/value takes at least ", kMinKvBytes, ")");
    }
    ReadMetadata(out, n_kv);
    ReadAlignment(out);
    ReadTensorInfos(out, n_tensors);
    PlaceTensorData(out);
    return out;
  }

 private:
  template <typename... Args>
  [[noreturn]] void Fail(const Args&... args) const {
    throw Error(StrCat(path_, ": ", args...));
  }

  uint64_t Remaining() const { return size_ - pos_; }

  // `what` is a string or a callable returning one (only evaluated on failure).
  template <typename What>
  static std::string Describe(const What& what) {
    if constexpr (std::is_invocable_v<const What&>) {
      return what();
    } else {
      return std::string(what);
    }
  }

  template <typename What>
  void Need(uint64_t n, const What& what) const {
    if (n > Remaining()) {
      Fail("truncated file: ", Describe(what), " at offset ", pos_, " needs ", n,
           " bytes but only ", Remaining(), " remain");
    }
  }

  template <typename T, typename What>
  T Read(const What& what) {
    Need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  template <typename What>
  std::string ReadString(const What& what) {
    const uint64_t at = pos_;
    const uint64_t len = Read<uint64_t>([&] { return StrCat("length of ", what()); });
    if (len > Remaining()) {
      Fail(what(), " at offset ", at, " has length ", len, ", which exceeds the ", Remaining(),
           " bytes remaining in the file");
    }
    std::string s(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(len));
    pos_ += len;
    return s;
  }

  void ReadHeader(Parsed& out) {
    if (size_ < 4) {
      Fail("truncated file: ", size_, " bytes is too small for a GGUF header (not a GGUF file)");
    }
    if (std::memcmp(data_, "GGUF", 4) != 0) {
      std::string shown;
      for (int i = 0; i < 4; ++i) {
        const unsigned char c = data_[i];
        if (c >= 0x20 && c < 0x7f) {
          shown += static_cast<char>(c);
        } else {
          static const char kHex[] = "0123456789abcdef";
          shown += "\\x";
          shown += kHex[c >> 4];
          shown += kHex[c & 15];
        }
      }
      Fail("not a GGUF file (bad magic '", shown, "', expected 'GGUF')");
    }
    pos_ = 4;
    const uint32_t version = Read<uint32_t>("version");
    if (version == 1) {
      Fail("GGUF version 1 is not supported (only versions 2 and 3 are); reconvert the model");
    }
    if (version != 0 && (version & 0xffffu) == 0) {
      Fail("unsupported GGUF version ", version,
           " (looks byte-swapped: a big-endian file? only little-endian v2/v3 are supported)");
    }
    if (version != 2 && version != 3) {
      Fail("unsupported GGUF version ", version, " (only versions 2 and 3 are supported)");
    }
    out.version = version;
  }

  void ReadMetadata(Parsed& out, uint64_t n_kv) {
    for (uint64_t i = 0; i < n_kv; ++i) {
      const uint64_t at = pos_;
      std::string key = ReadString([&] { return StrCat("key of metadata entry #", i); });
      if (key.empty()) Fail("metadata entry #", i, " at offset ", at, " has an empty key");
      if (out.metadata.count(key) != 0) {
        Fail("duplicate metadata key ", Quote(key), " (entry #", i, " at offset ", at, ")");
      }
      const uint32_t type =
          Read<uint32_t>([&] { return StrCat("type of metadata key ", Quote(key)); });
      GgufValue value = ReadValue(type, key, 0);
      out.metadata.emplace(std::move(key), std::move(value));
    }
  }

  GgufValue ReadValue(uint32_t type, const std::string& key, int depth) {
    auto what = [&] { return StrCat("value of metadata key ", Quote(key)); };
    switch (type) {
      case kGgufUint8:
        return Read<uint8_t>(what);
      case kGgufInt8:
        return Read<int8_t>(what);
      case kGgufUint16:
        return Read<uint16_t>(what);
      case kGgufInt16:
        return Read<int16_t>(what);
      case kGgufUint32:
        return Read<uint32_t>(what);
      case kGgufInt32:
        return Read<int32_t>(what);
      case kGgufFloat32:
        return Read<float>(what);
      case kGgufUint64:
        return Read<uint64_t>(what);
      case kGgufInt64:
        return Read<int64_t>(what);
      case kGgufFloat64:
        return Read<double>(what);
      case kGgufBool: {
        const uint64_t at = pos_;
        const uint8_t b = Read<uint8_t>(what);
        if (b > 1) {
          Fail("invalid bool value ", static_cast<int>(b), " at offset ", at, " in metadata key ",
               Quote(key), " (must be 0 or 1)");
        }
        return b != 0;
      }
      case kGgufString:
        return ReadString(what);
      case kGgufArray:
        return ReadArray(key, depth + 1);
      default:
        Fail("metadata key ", Quote(key), " has unknown value type ", type, " at offset ",
             pos_ - 4);
    }
  }

  GgufValue ReadArray(const std::string& key, int depth) {
    if (depth > kGgufMaxArrayDepth) {
      Fail("metadata key ", Quote(key), " has arrays nested deeper than ", kGgufMaxArrayDepth,
           " levels");
    }
    const uint64_t at = pos_;
    auto arr = std::make_shared<GgufArray>();
    arr->elem_type = Read<uint32_t>([&] { return StrCat("element type of array ", Quote(key)); });
    const uint64_t min_bytes = MinValueBytes(arr->elem_type);
    if (min_bytes == 0) {
      Fail("metadata array ", Quote(key), " at offset ", at, " has unknown value type ",
           arr->elem_type, " for its elements");
    }
    const uint64_t count = Read<uint64_t>([&] { return StrCat("count of array ", Quote(key)); });
    if (count > Remaining() / min_bytes) {
      Fail("metadata array ", Quote(key), " at offset ", at, " declares ", count,
           " elements of type ", GgufTypeName(arr->elem_type), ", which cannot fit in the ",
           Remaining(), " bytes remaining");
    }
    elements_ += count;
    if (elements_ > kGgufMaxMetadataElements) {
      Fail("metadata arrays hold more than ", kGgufMaxMetadataElements,
           " elements in total (at key ", Quote(key), ")");
    }
    arr->values.reserve(static_cast<size_t>(count));
    for (uint64_t j = 0; j < count; ++j) {
      arr->values.push_back(ReadValue(arr->elem_type, key, depth));
    }
    return arr;
  }

  void ReadAlignment(Parsed& out) {
    auto it = out.metadata.find("general.alignment");
    if (it == out.metadata.end()) return;
    const uint32_t* a = std::get_if<uint32_t>(&it->second);
    if (a == nullptr) {
      Fail("general.alignment must be of type uint32, found ", GgufValueTypeName(it->second));
    }
    if (*a == 0 || (*a & (*a - 1)) != 0) {
      Fail("general.alignment ", *a, " is not a nonzero power of two");
    }
    out.alignment = *a;
  }

  void ReadTensorInfos(Parsed& out, uint64_t n_tensors) {
    // Checked here rather than with the header so a truncated metadata section is reported
    // where it is cut.
    if (n_tensors > Remaining() / kMinTensorInfoBytes) {
      Fail("tensor count ", n_tensors, " cannot fit in the ", Remaining(),
           " bytes remaining after the metadata (each tensor info takes at least ",
           kMinTensorInfoBytes, ")");
    }
    out.tensors.reserve(static_cast<size_t>(n_tensors));
    offsets_.reserve(static_cast<size_t>(n_tensors));
    for (uint64_t i = 0; i < n_tensors; ++i) {
      TensorView t;
      const uint64_t at = pos_;
      t.name = ReadString([&] { return StrCat("name of tensor #", i); });
      if (out.index.count(t.name) != 0) {
        Fail("duplicate tensor name ", Quote(t.name), " (tensor #", i, " at offset ", at, ")");
      }
      auto what = [&](const char* field) {
        return [&t, field] { return StrCat(field, " of tensor ", Quote(t.name)); };
      };
      const uint32_t n_dims = Read<uint32_t>(what("n_dims"));
      if (n_dims == 0 || n_dims > kMaxDims) {
        Fail("tensor ", Quote(t.name), " has n_dims ", n_dims, " (must be 1..", kMaxDims, ")");
      }
      uint64_t ne[kMaxDims] = {1, 1, 1, 1};
      for (uint32_t d = 0; d < n_dims; ++d) {
        ne[d] = Read<uint64_t>(what("dimensions"));
        if (ne[d] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          Fail("tensor ", Quote(t.name), " dimension ne[", d, "] = ", ne[d],
               " is too large (overflows int64)");
        }
      }
      // Element count must be representable as int64 (the product of the nonzero dims).
      uint64_t numel = 1;
      bool has_zero = false;
      for (uint32_t d = 0; d < n_dims; ++d) {
        if (ne[d] == 0) {
          has_zero = true;
          continue;
        }
        if (__builtin_mul_overflow(numel, ne[d], &numel) ||
            numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          Fail("tensor ", Quote(t.name), " shape ", ShapeString(ne, n_dims),
               " element count overflows int64");
        }
      }
      if (has_zero) numel = 0;

      const uint32_t type = Read<uint32_t>(what("type"));
      std::optional<DType> dtype = DTypeFromGgmlType(type);
      if (!dtype) {
        if (const char* name = GgmlTypeName(type)) {
          Fail("tensor ", Quote(t.name), " has ggml type ", type, " (", name,
               "), which is not supported");
        }
        Fail("tensor ", Quote(t.name), " has unknown ggml type id ", type);
      }
      t.dtype = *dtype;
      const DTypeInfo& info = GetDTypeInfo(t.dtype);
      if (ne[0] % static_cast<uint64_t>(info.block_elems) != 0) {
        Fail("tensor ", Quote(t.name), " of type ", info.name, " has row length ne[0] = ", ne[0],
             ", not a multiple of the block size ", info.block_elems);
      }
      std::optional<uint64_t> nbytes = BytesForElements(t.dtype, numel);
      if (!nbytes) {
        Fail("tensor ", Quote(t.name), " shape ", ShapeString(ne, n_dims),
             " size in bytes overflows");
      }
      t.nbytes = *nbytes;
      const uint64_t offset = Read<uint64_t>(what("data offset"));
      t.shape.resize(n_dims);
      for (uint32_t d = 0; d < n_dims; ++d) {
        t.shape[n_dims - 1 - d] = static_cast<int64_t>(ne[d]);
      }
      out.index.emplace(t.name, out.tensors.size());
      out.tensors.push_back(std::move(t));
      offsets_.push_back(offset);
    }
  }

  static std::string ShapeString(const uint64_t* ne, uint32_t n_dims) {
    std::string s = "ne=[";
    for (uint32_t d = 0; d < n_dims; ++d) {
      if (d) s += ", ";
      s += std::to_string(ne[d]);
    }
    return s + "]";
  }

  void PlaceTensorData(Parsed& out) {
    const uint64_t align = out.alignment;
    // pos_ <= size_ and align <= 2^31, so this cannot overflow.
    const uint64_t data_start = (pos_ + align - 1) / align * align;
    out.data_offset = data_start;
    if (out.tensors.empty()) return;
    if (data_start > size_) {
      Fail("truncated file: tensor data section would start at offset ", data_start,
           " (after the tensor infos, aligned to ", align, "), past end of file (size ", size_,
           ")");
    }
    const uint64_t data_size = size_ - data_start;
    for (size_t i = 0; i < out.tensors.size(); ++i) {
      TensorView& t = out.tensors[i];
      const uint64_t off = offsets_[i];
      if (off % align != 0) {
        Fail("tensor ", Quote(t.name), " data offset ", off, " is not a multiple of the alignment ",
             align);
      }
      if (off > data_size || t.nbytes > data_size - off) {
        uint64_t abs = 0;
        std::string where = __builtin_add_overflow(data_start, off, &abs)
                                ? StrCat(data_start, " + ", off)
                                : std::to_string(abs);
        Fail("tensor ", Quote(t.name), " data [offset ", where, ", size ", t.nbytes,
             "] extends past end of file (size ", size_, ")");
      }
      t.data = data_ + data_start + off;
    }
    // No two tensors may share bytes (empty tensors share nothing).
    std::vector<size_t> order;
    for (size_t i = 0; i < out.tensors.size(); ++i) {
      if (out.tensors[i].nbytes > 0) order.push_back(i);
    }
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return offsets_[a] < offsets_[b]; });
    for (size_t k = 1; k < order.size(); ++k) {
      const size_t a = order[k - 1], b = order[k];
      if (offsets_[b] < offsets_[a] + out.tensors[a].nbytes) {
        Fail("tensors ", Quote(out.tensors[a].name), " [offset ", offsets_[a], ", size ",
             out.tensors[a].nbytes, "] and ", Quote(out.tensors[b].name), " [offset ", offsets_[b],
             ", size ", out.tensors[b].nbytes,
             "] overlap (offsets relative to the data section at ", data_start, ")");
      }
    }
  }

  const std::string& path_;
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
  uint64_t elements_ = 0;
  std::vector<uint64_t> offsets_;
};

template <typename T>
constexpr bool kIsInt = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// Integer value of a scalar GgufValue; nullopt if not an integer type, error if it doesn't fit.
std::optional<int64_t> AsInt(const GgufValue& v, bool* fits) {
  *fits = true;
  return std::visit(
      [fits](const auto& x) -> std::optional<int64_t> {
        using T = std::decay_t<decltype(x)>;
        if constexpr (kIsInt<T>) {
          if constexpr (std::is_same_v<T, uint64_t>) {
            if (x > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
              *fits = false;
              return std::nullopt;
            }
          }
          return static_cast<int64_t>(x);
        } else {
          return std::nullopt;
        }
      },
      v);
}

std::optional<double> AsDouble(const GgufValue& v) {
  return std::visit(
      [](const auto& x) -> std::optional<double> {
        using T = std::decay_t<decltype(x)>;
        if constexpr (kIsInt<T> || std::is_floating_point_v<T>) {
          return static_cast<double>(x);
        } else {
          return std::nullopt;
        }
      },
      v);
}

bool IsIntType(uint32_t t) {
  switch (t) {
    case kGgufUint8:
    case kGgufInt8:
    case kGgufUint16:
    case kGgufInt16:
    case kGgufUint32:
    case kGgufInt32:
    case kGgufUint64:
    case kGgufInt64:
      return true;
    default:
      return false;
  }
}

}  // namespace

uint32_t GgufTypeOf(const GgufValue& v) {
  static constexpr uint32_t kByIndex[] = {
      kGgufUint8, kGgufInt8,    kGgufUint16,  kGgufInt16, kGgufUint32, kGgufInt32, kGgufUint64,
      kGgufInt64, kGgufFloat32, kGgufFloat64, kGgufBool,  kGgufString, kGgufArray,
  };
  static_assert(std::size(kByIndex) == std::variant_size_v<GgufValue>);
  return kByIndex[v.index()];
}

const char* GgufTypeName(uint32_t type) {
  static const char* const kNames[] = {"uint8",  "int8",    "uint16", "int16",  "uint32",
                                       "int32",  "float32", "bool",   "string", "array",
                                       "uint64", "int64",   "float64"};
  return type < std::size(kNames) ? kNames[type] : "unknown";
}

std::string GgufValueTypeName(const GgufValue& v) {
  if (const auto* arr = std::get_if<std::shared_ptr<GgufArray>>(&v)) {
    if (*arr && (*arr)->elem_type == kGgufArray && !(*arr)->values.empty()) {
      return "array of " + GgufValueTypeName((*arr)->values.front());
    }
    return std::string("array of ") + GgufTypeName(*arr ? (*arr)->elem_type : 0);
  }
  return GgufTypeName(GgufTypeOf(v));
}

GgufFile::GgufFile(const std::string& path)
    : GgufFile(std::make_shared<MappedFile>(path), 0, ~uint64_t{0}, path) {}

GgufFile::GgufFile(std::shared_ptr<const MappedFile> file, uint64_t offset, uint64_t size,
                   std::string name)
    : file_(std::move(file)), name_(std::move(name)) {
  KILN_CHECK(offset <= file_->size(), name_, ": offset ", offset, " is past the end of ",
             file_->path());
  size = std::min<uint64_t>(size, file_->size() - offset);
  Parsed p = Parser(name_, file_->data() + offset, size).Run();
  version_ = p.version;
  alignment_ = p.alignment;
  data_offset_ = p.data_offset;
  metadata_ = std::move(p.metadata);
  tensors_ = std::move(p.tensors);
  index_ = std::move(p.index);
}

const GgufValue* GgufFile::Get(const std::string& key) const {
  auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

namespace {

[[noreturn]] void WrongType(const std::string& path, const std::string& key, const GgufValue& v,
                            const char* expected) {
  throw Error(StrCat(path, ": metadata key '", key, "' is ", GgufValueTypeName(v), ", expected ",
                     expected));
}

const GgufArray* ArrayOrThrow(const std::string& path, const std::string& key, const GgufValue& v,
                              const char* expected) {
  const auto* arr = std::get_if<std::shared_ptr<GgufArray>>(&v);
  if (arr == nullptr || *arr == nullptr) WrongType(path, key, v, expected);
  return arr->get();
}

}  // namespace

std::optional<std::string> GgufFile::GetString(const std::string& key) const {
  const GgufValue* v = Get(key);
  if (v == nullptr) return std::nullopt;
  const auto* s = std::get_if<std::string>(v);
  if (s == nullptr) WrongType(name_, key, *v, "string");
  return *s;
}

std::optional<int64_t> GgufFile::GetInt(const std::string& key) const {
  const GgufValue* v = Get(key);
  if (v == nullptr) return std::nullopt;
  bool fits = true;
  std::optional<int64_t> i = AsInt(*v, &fits);
  if (!fits) {
    throw Error(StrCat(name_, ": metadata key '", key, "' value ", std::get<uint64_t>(*v),
                       " does not fit in int64"));
  }
  if (!i) WrongType(name_, key, *v, "an integer");
  return i;
}

std::optional<double> GgufFile::GetFloat(const std::string& key) const {
  const GgufValue* v = Get(key);
  if (v == nullptr) return std::nullopt;
  std::optional<double> d = AsDouble(*v);
  if (!d) WrongType(name_, key, *v, "a number");
  return d;
}

std::optional<bool> GgufFile::GetBool(const std::string& key) const {
  const GgufValue* v = Get(key);
  if (v == nullptr) return std::nullopt;
  const bool* b = std::get_if<bool>(v);
  if (b == nullptr) WrongType(name_, key, *v, "bool");
  return *b;
}

std::optional<std::vector<std::string>> GgufFile::GetStringArray(const std::string& key) const {
  const GgufValue* v = Get(key);
  if (v == nullptr) return std::nullopt;
  const GgufArray* arr = ArrayOrThrow(name_, key, *v, "array of string");
  std::vector<std::string> out;
  if (arr->values.empty()) return out;
  if (arr->elem_type != kGgufString) WrongType(name_, key, *v, "array of string");
  out.reserve(arr->values.size());
  for (const GgufValue& e : arr->values) out.push_back(std::get<std::string>(e));
  return out;
}

std::optional<std::vector<double>> GgufFile::GetFloatArray(const std::string& key) const {
  const GgufValue* v = Get(key);
  if (v == nullptr) return std::nullopt;
  const GgufArray* arr = ArrayOrThrow(name_, key, *v, "array of numbers");
  std::vector<double> out;
  if (arr->values.empty()) return out;
  if (arr->elem_type != kGgufFloat32 && arr->elem_type != kGgufFloat64 &&
      !IsIntType(arr->elem_type)) {
    WrongType(name_, key, *v, "array of numbers");
  }
  out.reserve(arr->values.size());
  for (const GgufValue& e : arr->values) out.push_back(*AsDouble(e));
  return out;
}

std::optional<std::vector<int64_t>> GgufFile::GetIntArray(const std::string& key) const {
  const GgufValue* v = Get(key);
  if (v == nullptr) return std::nullopt;
  const GgufArray* arr = ArrayOrThrow(name_, key, *v, "array of integers");
  std::vector<int64_t> out;
  if (arr->values.empty()) return out;
  if (!IsIntType(arr->elem_type)) WrongType(name_, key, *v, "array of integers");
  out.reserve(arr->values.size());
  for (size_t i = 0; i < arr->values.size(); ++i) {
    bool fits = true;
    std::optional<int64_t> x = AsInt(arr->values[i], &fits);
    if (!fits) {
      throw Error(StrCat(name_, ": metadata key '", key, "' element ", i, " value ",
                         std::get<uint64_t>(arr->values[i]), " does not fit in int64"));
    }
    out.push_back(*x);
  }
  return out;
}

const TensorView* GgufFile::Find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

std::vector<std::string> GgufFile::Names() const {
  std::vector<std::string> names;
  names.reserve(tensors_.size());
  for (const TensorView& t : tensors_) names.push_back(t.name);
  return names;
}

}  // namespace kiln
