// Small safetensors writer, for tests and benchmarks that need model files.
//
// Output matches the reference implementation's layout: 8-byte little-endian header length,
// compact JSON header ("__metadata__" first, then tensors in data order, each as
// {"dtype","shape","data_offsets"}) padded with spaces to a multiple of 8 bytes, then the
// tensor data with no gaps, ordered by element size (largest first) then name, so every tensor
// starts at a multiple of its element size.
//
// Misuse (duplicate names, size/shape mismatch, unknown dtype) throws kiln::Error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "util/dtype.h"

namespace kiln {

class SafetensorsWriter {
 public:
  void SetMetadata(const std::string& key, const std::string& value);

  // `dtype`: F32, F16 or BF16. `shape` in PyTorch order (may be empty: a scalar). The bytes
  // are copied.
  void AddTensor(const std::string& name, DType dtype, std::vector<int64_t> shape, const void* data,
                 size_t nbytes);
  // Any safetensors dtype by name ("F32", "I64", "BOOL", ...), e.g. to make files Kiln rejects.
  void AddTensor(const std::string& name, const std::string& dtype, std::vector<int64_t> shape,
                 const void* data, size_t nbytes);
  void AddTensorF32(const std::string& name, std::vector<int64_t> shape,
                    const std::vector<float>& values);

  // The JSON header as written, including the padding spaces.
  std::string Header() const;
  std::vector<uint8_t> Serialize() const;
  void Write(const std::string& path) const;  // throws kiln::Error on I/O failure

 private:
  struct Tensor {
    std::string name;
    std::string dtype;
    uint64_t elem_size;
    std::vector<int64_t> shape;
    std::vector<uint8_t> data;
  };
  std::vector<const Tensor*> Ordered() const;

  std::map<std::string, std::string> metadata_;
  std::vector<Tensor> tensors_;
};

}  // namespace kiln
