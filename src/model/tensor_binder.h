// Looks up a checkpoint's tensors by name with their shapes checked: matrices stay in the
// mapped file in their stored dtype, vectors (norms, biases) are converted to f32. Shared by
// the decoder's and the encoder's weight binding.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "formats/tensor.h"
#include "kernels/ops.h"

namespace kiln {

class TensorBinder {
 public:
  explicit TensorBinder(const WeightSource& source) : source_(source) {}

  const WeightSource& source() const { return source_; }
  bool Has(const std::string& name) const { return source_.Find(name) != nullptr; }
  // kiln::Error naming the source and the tensor when it is missing.
  const TensorView& Require(const std::string& name) const;
  // A [rows, cols] matrix; a Kiln artifact's packed panels must match this CPU's kernels (else
  // ArtifactError, so the model cache exports the entry again).
  kernels::Matrix Matrix(const std::string& name, int64_t rows, int64_t cols) const;
  // A [n] vector as f32.
  std::vector<float> Vector(const std::string& name, int64_t n) const;

 private:
  const WeightSource& source_;
};

}  // namespace kiln
