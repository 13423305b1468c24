// GGUF v2/v3 reader: header, metadata key/values, tensor infos, mmapped tensor data.
// Every count, length, offset, shape and type is validated against the file before use; a
// malformed file throws kiln::Error("<path>: <problem>"), never reads out of bounds.
//
// Accepted: little-endian v2/v3; non-empty unique keys; bools 0/1; general.alignment a uint32
// nonzero power of two (default 32); unique tensor names; n_dims 1..4; dims >= 0 (a zero dim
// is an empty tensor, as in llama.cpp) with the element count fitting int64; ne[0] a multiple
// of the type's block; offsets aligned, inside the file and not overlapping (gaps and any
// order are fine). Shapes are exposed in PyTorch order (ne reversed).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "formats/tensor.h"
#include "util/mmap_file.h"

namespace kiln {

// GGUF metadata value type ids, as stored in the file.
enum GgufType : uint32_t {
  kGgufUint8 = 0,
  kGgufInt8 = 1,
  kGgufUint16 = 2,
  kGgufInt16 = 3,
  kGgufUint32 = 4,
  kGgufInt32 = 5,
  kGgufFloat32 = 6,
  kGgufBool = 7,
  kGgufString = 8,
  kGgufArray = 9,
  kGgufUint64 = 10,
  kGgufInt64 = 11,
  kGgufFloat64 = 12,
};

// Reader limits (a file beyond them is rejected with a clear error).
inline constexpr int kGgufMaxArrayDepth = 8;  // an array of arrays of ... at most this deep
// Total array elements over all metadata; each costs ~40 bytes of memory once parsed.
inline constexpr uint64_t kGgufMaxMetadataElements = uint64_t{1} << 24;
inline constexpr uint32_t kGgufDefaultAlignment = 32;

// GGUF metadata value. Arrays hold elements of one type; nested arrays are allowed by the
// format and kept as GgufArray elements.
struct GgufArray;
using GgufValue =
    std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, uint64_t, int64_t, float,
                 double, bool, std::string, std::shared_ptr<GgufArray>>;
struct GgufArray {
  uint32_t elem_type = 0;  // GGUF value type id of the elements
  std::vector<GgufValue> values;
};

// The GGUF type id a value is stored as (kGgufArray for arrays).
uint32_t GgufTypeOf(const GgufValue& v);
// "uint32", "string", "array", ...; "unknown" for ids outside 0..12.
const char* GgufTypeName(uint32_t type);
// "uint32", "array of string", "array of array of int8", ...
std::string GgufValueTypeName(const GgufValue& v);

class GgufFile : public WeightSource {
 public:
  explicit GgufFile(const std::string& path);
  // The GGUF file that fills [offset, offset + size) of an already mapped file (a Kiln
  // artifact keeps its source's metadata so); `name` is used in messages.
  GgufFile(std::shared_ptr<const MappedFile> file, uint64_t offset, uint64_t size,
           std::string name);

  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  // File offset where the tensor data section starts (tensor offsets are relative to it).
  uint64_t data_offset() const { return data_offset_; }
  const std::map<std::string, GgufValue>& metadata() const { return metadata_; }
  const GgufValue* Get(const std::string& key) const;

  // Typed getters: nullopt when absent; throw kiln::Error when present with a wrong type.
  // Integer getters accept any integer type whose value fits.
  std::optional<std::string> GetString(const std::string& key) const;
  std::optional<int64_t> GetInt(const std::string& key) const;
  std::optional<double> GetFloat(const std::string& key) const;  // any float or integer
  std::optional<bool> GetBool(const std::string& key) const;
  std::optional<std::vector<std::string>> GetStringArray(const std::string& key) const;
  std::optional<std::vector<double>> GetFloatArray(const std::string& key) const;
  std::optional<std::vector<int64_t>> GetIntArray(const std::string& key) const;
  // (Array getters: an empty array converts to an empty vector whatever its element type.)

  // WeightSource
  const TensorView* Find(const std::string& name) const override;
  std::vector<std::string> Names() const override;  // file order
  std::string Describe() const override { return name_; }
  const std::vector<TensorView>& tensors() const { return tensors_; }  // file order

 private:
  std::shared_ptr<const MappedFile> file_;
  std::string name_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kGgufDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::map<std::string, GgufValue> metadata_;
  std::vector<TensorView> tensors_;
  std::map<std::string, size_t> index_;
};

}  // namespace kiln
