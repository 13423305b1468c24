// Small GGUF v3 writer, for tests and benchmarks that need model files.
//
// Output follows what llama.cpp's gguf loader requires: non-empty unique keys, general.alignment
// (uint32, only written when not the default 32), tensor names under 64 bytes, tensor data in
// tensor-info order with every tensor (the last one included) padded to the alignment and the
// data section starting at an aligned file offset. Nested arrays are allowed (the GGUF format
// has them and GgufFile reads them) but llama.cpp rejects them.
//
// Misuse (duplicate names, size/shape mismatch, ...) throws kiln::Error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "formats/gguf.h"
#include "util/dtype.h"

namespace kiln {

class GgufWriter {
 public:
  // `alignment`: nonzero power of two. `version`: 2 or 3 (same layout; 3 is current).
  explicit GgufWriter(uint32_t alignment = kGgufDefaultAlignment, uint32_t version = 3);

  // Metadata, written in insertion order. `Set` takes any value: pass the exact C++ type for
  // the GGUF type wanted (uint32_t{5}, 1.0f, std::string("x"), a GgufArray, ...).
  void Set(const std::string& key, GgufValue value);
  void SetString(const std::string& key, std::string value) { Set(key, std::move(value)); }
  void SetUint32(const std::string& key, uint32_t value) { Set(key, value); }
  void SetInt32(const std::string& key, int32_t value) { Set(key, value); }
  void SetUint64(const std::string& key, uint64_t value) { Set(key, value); }
  void SetInt64(const std::string& key, int64_t value) { Set(key, value); }
  void SetFloat32(const std::string& key, float value) { Set(key, value); }
  void SetFloat64(const std::string& key, double value) { Set(key, value); }
  void SetBool(const std::string& key, bool value) { Set(key, value); }
  void SetArray(const std::string& key, GgufArray array);
  void SetStringArray(const std::string& key, const std::vector<std::string>& values);
  void SetInt32Array(const std::string& key, const std::vector<int32_t>& values);
  void SetUint32Array(const std::string& key, const std::vector<uint32_t>& values);
  void SetInt64Array(const std::string& key, const std::vector<int64_t>& values);
  void SetFloat32Array(const std::string& key, const std::vector<float>& values);

  // A tensor from raw bytes in `dtype`'s layout; `shape` in PyTorch order (outermost first,
  // 1 to 4 dims, the last dim a multiple of the block size). The bytes are copied.
  void AddTensor(const std::string& name, DType dtype, std::vector<int64_t> shape, const void* data,
                 size_t nbytes);
  void AddTensor(const std::string& name, DType dtype, std::vector<int64_t> shape,
                 std::vector<uint8_t> data);
  void AddTensorF32(const std::string& name, std::vector<int64_t> shape,
                    const std::vector<float>& values);

  std::vector<uint8_t> Serialize() const;
  void Write(const std::string& path) const;  // throws kiln::Error on I/O failure

  uint32_t alignment() const { return alignment_; }

 private:
  struct Tensor {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    std::vector<uint8_t> data;
  };
  template <typename Sink>
  void Emit(Sink& sink) const;

  uint32_t alignment_;
  uint32_t version_;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::vector<Tensor> tensors_;
};

}  // namespace kiln
