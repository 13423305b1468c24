#include "formats/tensor.h"

namespace kiln {

int64_t TensorView::NumElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t TensorView::Rows() const {
  int64_t n = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) n *= shape[i];
  return n;
}

int64_t TensorView::Cols() const { return shape.empty() ? 1 : shape.back(); }

}  // namespace kiln
