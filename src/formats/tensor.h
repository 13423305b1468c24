// A named, typed, read-only view of one weight tensor inside a mapped file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "util/dtype.h"

namespace kiln {

struct TensorView {
  std::string name;
  DType dtype = DType::kF32;
  // PyTorch order, outermost first: a Linear weight is {out_features, in_features}, rows
  // contiguous. (GGUF stores ne[] innermost first; the reader reverses it.)
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;  // inside the mapping, valid while the owning file lives
  uint64_t nbytes = 0;            // bytes of `data` (the stored layout: shape x dtype)
  // A Kiln artifact's matrices are stored only in the layout the kernels read on the target
  // they were exported for (kernels::PackMatrix): then `data` is null, `nbytes` still the
  // stored layout's size, and `packed` / `packed_bytes` the panels inside the mapping.
  const uint8_t* packed = nullptr;
  uint64_t packed_bytes = 0;

  int64_t NumElements() const;
  int64_t Rows() const;  // product of all but the last dim (1 for a scalar)
  int64_t Cols() const;  // last dim
};

// Anything that serves tensors by name: a GGUF file, one or many safetensors shards.
class WeightSource {
 public:
  virtual ~WeightSource() = default;
  // nullptr when absent.
  virtual const TensorView* Find(const std::string& name) const = 0;
  virtual std::vector<std::string> Names() const = 0;
  // Where the tensors come from, for error messages.
  virtual std::string Describe() const = 0;
};

}  // namespace kiln
