#include "formats/gguf_writer.h"

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

#include "util/error.h"

namespace kiln {

static_assert(std::endian::native == std::endian::little, "the GGUF writer assumes little-endian");

namespace {

constexpr size_t kMaxTensorName = 63;  // llama.cpp: GGML_MAX_NAME (64) including the NUL

class VectorSink {
 public:
  explicit VectorSink(std::vector<uint8_t>* out) : out_(out) {}
  void Put(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out_->insert(out_->end(), b, b + n);
    pos_ += n;
  }
  uint64_t pos() const { return pos_; }

 private:
  std::vector<uint8_t>* out_;
  uint64_t pos_ = 0;
};

class FileSink {
 public:
  explicit FileSink(const std::string& path) : path_(path), f_(std::fopen(path.c_str(), "wb")) {
    KILN_CHECK(f_ != nullptr, path, ": cannot create: ", std::strerror(errno));
  }
  ~FileSink() {
    if (f_ != nullptr) std::fclose(f_);
  }
  FileSink(const FileSink&) = delete;
  FileSink& operator=(const FileSink&) = delete;
  void Put(const void* p, size_t n) {
    if (n > 0 && std::fwrite(p, 1, n, f_) != n) {
      throw Error(StrCat(path_, ": write failed: ", std::strerror(errno)));
    }
    pos_ += n;
  }
  void Close() {
    const int rc = std::fclose(f_);
    f_ = nullptr;
    KILN_CHECK(rc == 0, path_, ": write failed: ", std::strerror(errno));
  }
  uint64_t pos() const { return pos_; }

 private:
  std::string path_;
  std::FILE* f_;
  uint64_t pos_ = 0;
};

template <typename Sink, typename T>
void PutPod(Sink& s, T v) {
  s.Put(&v, sizeof(v));
}

template <typename Sink>
void PutString(Sink& s, const std::string& str) {
  PutPod<Sink, uint64_t>(s, str.size());
  s.Put(str.data(), str.size());
}

template <typename Sink>
void Pad(Sink& s, uint64_t alignment) {
  static const uint8_t kZeros[256] = {};
  uint64_t pad = (alignment - s.pos() % alignment) % alignment;
  while (pad > 0) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(pad, sizeof(kZeros)));
    s.Put(kZeros, n);
    pad -= n;
  }
}

template <typename Sink>
void PutValue(Sink& s, const GgufValue& v) {
  std::visit(
      [&s](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          PutString(s, x);
        } else if constexpr (std::is_same_v<T, bool>) {
          PutPod<Sink, uint8_t>(s, x ? 1 : 0);
        } else if constexpr (std::is_same_v<T, std::shared_ptr<GgufArray>>) {
          PutPod<Sink, uint32_t>(s, x->elem_type);
          PutPod<Sink, uint64_t>(s, x->values.size());
          for (const GgufValue& e : x->values) PutValue(s, e);
        } else {
          PutPod<Sink, T>(s, x);
        }
      },
      v);
}

void CheckValue(const std::string& key, const GgufValue& v, int depth) {
  const auto* arr = std::get_if<std::shared_ptr<GgufArray>>(&v);
  if (arr == nullptr) return;
  KILN_CHECK(*arr != nullptr, "GgufWriter: metadata key '", key, "' holds a null array");
  KILN_CHECK(depth < kGgufMaxArrayDepth, "GgufWriter: metadata key '", key,
             "' nests arrays deeper than ", kGgufMaxArrayDepth);
  const uint32_t et = (*arr)->elem_type;
  KILN_CHECK(et <= kGgufFloat64, "GgufWriter: metadata key '", key, "' has element type ", et);
  for (const GgufValue& e : (*arr)->values) {
    KILN_CHECK(GgufTypeOf(e) == et, "GgufWriter: metadata array '", key, "' of ", GgufTypeName(et),
               " holds a ", GgufTypeName(GgufTypeOf(e)));
    CheckValue(key, e, depth + 1);
  }
}

template <typename T>
GgufArray MakeArray(uint32_t type, const std::vector<T>& values) {
  GgufArray a;
  a.elem_type = type;
  a.values.reserve(values.size());
  for (const T& v : values) a.values.emplace_back(v);
  return a;
}

}  // namespace

GgufWriter::GgufWriter(uint32_t alignment, uint32_t version)
    : alignment_(alignment), version_(version) {
  KILN_CHECK(alignment != 0 && (alignment & (alignment - 1)) == 0, "GgufWriter: alignment ",
             alignment, " is not a nonzero power of two");
  KILN_CHECK(version == 2 || version == 3, "GgufWriter: version ", version, " (must be 2 or 3)");
}

void GgufWriter::Set(const std::string& key, GgufValue value) {
  KILN_CHECK(!key.empty(), "GgufWriter: empty metadata key");
  for (const auto& kv : kv_) {
    KILN_CHECK(kv.first != key, "GgufWriter: duplicate metadata key '", key, "'");
  }
  if (key == "general.alignment") {
    const uint32_t* a = std::get_if<uint32_t>(&value);
    KILN_CHECK(a != nullptr && *a == alignment_,
               "GgufWriter: general.alignment must be the uint32 given to the constructor (",
               alignment_, ")");
  }
  CheckValue(key, value, 0);
  kv_.emplace_back(key, std::move(value));
}

void GgufWriter::SetArray(const std::string& key, GgufArray array) {
  Set(key, std::make_shared<GgufArray>(std::move(array)));
}
void GgufWriter::SetStringArray(const std::string& key, const std::vector<std::string>& values) {
  SetArray(key, MakeArray(kGgufString, values));
}
void GgufWriter::SetInt32Array(const std::string& key, const std::vector<int32_t>& values) {
  SetArray(key, MakeArray(kGgufInt32, values));
}
void GgufWriter::SetUint32Array(const std::string& key, const std::vector<uint32_t>& values) {
  SetArray(key, MakeArray(kGgufUint32, values));
}
void GgufWriter::SetInt64Array(const std::string& key, const std::vector<int64_t>& values) {
  SetArray(key, MakeArray(kGgufInt64, values));
}
void GgufWriter::SetFloat32Array(const std::string& key, const std::vector<float>& values) {
  SetArray(key, MakeArray(kGgufFloat32, values));
}

void GgufWriter::AddTensor(const std::string& name, DType dtype, std::vector<int64_t> shape,
                           const void* data, size_t nbytes) {
  const auto* b = static_cast<const uint8_t*>(data);
  AddTensor(name, dtype, std::move(shape), std::vector<uint8_t>(b, b + nbytes));
}

void GgufWriter::AddTensor(const std::string& name, DType dtype, std::vector<int64_t> shape,
                           std::vector<uint8_t> data) {
  KILN_CHECK(!name.empty() && name.size() <= kMaxTensorName, "GgufWriter: tensor name '", name,
             "' must be 1..", kMaxTensorName, " bytes");
  for (const Tensor& t : tensors_) {
    KILN_CHECK(t.name != name, "GgufWriter: duplicate tensor name '", name, "'");
  }
  KILN_CHECK(!shape.empty() && shape.size() <= 4, "GgufWriter: tensor '", name, "' has ",
             shape.size(), " dims (must be 1..4)");
  uint64_t numel = 1;
  bool zero = false;
  for (int64_t d : shape) {
    KILN_CHECK(d >= 0, "GgufWriter: tensor '", name, "' has a negative dimension");
    if (d == 0) {
      zero = true;
      continue;
    }
    KILN_CHECK(!__builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel) &&
                   numel <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()),
               "GgufWriter: tensor '", name, "' element count overflows");
  }
  if (zero) numel = 0;
  const DTypeInfo& info = GetDTypeInfo(dtype);
  KILN_CHECK(shape.back() % info.block_elems == 0, "GgufWriter: tensor '", name, "' last dim ",
             shape.back(), " is not a multiple of the ", info.name, " block size ",
             info.block_elems);
  std::optional<uint64_t> want = BytesForElements(dtype, numel);
  KILN_CHECK(want && *want == data.size(), "GgufWriter: tensor '", name, "' has ", data.size(),
             " bytes of data, its shape and type need ", want ? *want : 0);
  tensors_.push_back({name, dtype, std::move(shape), std::move(data)});
}

void GgufWriter::AddTensorF32(const std::string& name, std::vector<int64_t> shape,
                              const std::vector<float>& values) {
  AddTensor(name, DType::kF32, std::move(shape), values.data(), values.size() * sizeof(float));
}

template <typename Sink>
void GgufWriter::Emit(Sink& s) const {
  bool has_alignment_key = false;
  for (const auto& kv : kv_) has_alignment_key |= kv.first == "general.alignment";
  const bool add_alignment = alignment_ != kGgufDefaultAlignment && !has_alignment_key;

  s.Put("GGUF", 4);
  PutPod<Sink, uint32_t>(s, version_);
  PutPod<Sink, uint64_t>(s, tensors_.size());
  PutPod<Sink, uint64_t>(s, kv_.size() + (add_alignment ? 1 : 0));
  if (add_alignment) {
    PutString(s, "general.alignment");
    PutPod<Sink, uint32_t>(s, kGgufUint32);
    PutPod<Sink, uint32_t>(s, alignment_);
  }
  for (const auto& [key, value] : kv_) {
    PutString(s, key);
    PutPod<Sink, uint32_t>(s, GgufTypeOf(value));
    PutValue(s, value);
  }
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    PutString(s, t.name);
    PutPod<Sink, uint32_t>(s, static_cast<uint32_t>(t.shape.size()));
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) {
      PutPod<Sink, uint64_t>(s, static_cast<uint64_t>(*it));
    }
    PutPod<Sink, uint32_t>(s, GgmlTypeOf(t.dtype));
    PutPod<Sink, uint64_t>(s, offset);
    offset += (t.data.size() + alignment_ - 1) / alignment_ * alignment_;
  }
  Pad(s, alignment_);
  for (const Tensor& t : tensors_) {
    s.Put(t.data.data(), t.data.size());
    Pad(s, alignment_);
  }
}

std::vector<uint8_t> GgufWriter::Serialize() const {
  std::vector<uint8_t> out;
  VectorSink sink(&out);
  Emit(sink);
  return out;
}

void GgufWriter::Write(const std::string& path) const {
  FileSink sink(path);
  Emit(sink);
  sink.Close();
}

}  // namespace kiln
