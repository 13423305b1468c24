#include "model/tensor_binder.h"

#include "formats/kiln_artifact.h"
#include "util/error.h"

namespace kiln {
namespace {

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

kernels::Matrix VectorRow(const WeightSource& source, const TensorView& t, int64_t n) {
  auto bytes = BytesForElements(t.dtype, static_cast<uint64_t>(n));
  KILN_CHECK(bytes.has_value() && *bytes == t.nbytes, source.Describe(), ": tensor '", t.name,
             "' size does not match its shape and dtype");
  return kernels::Matrix{t.dtype, 1, n, t.data, *bytes};
}

}  // namespace

const TensorView& TensorBinder::Require(const std::string& name) const {
  const TensorView* t = source_.Find(name);
  KILN_CHECK(t != nullptr, source_.Describe(), ": missing tensor '", name, "'");
  return *t;
}

kernels::Matrix TensorBinder::Matrix(const std::string& name, int64_t rows, int64_t cols) const {
  const TensorView& t = Require(name);
  KILN_CHECK(t.shape.size() == 2 && t.shape[0] == rows && t.shape[1] == cols, source_.Describe(),
             ": tensor '", name, "' has shape ", ShapeText(t.shape), ", expected [", rows, ", ",
             cols, "]");
  auto row_bytes = BytesForElements(t.dtype, static_cast<uint64_t>(cols));
  KILN_CHECK(row_bytes.has_value() && *row_bytes * rows == t.nbytes, source_.Describe(),
             ": tensor '", name, "' size does not match its shape and dtype");
  kernels::Matrix m{t.dtype, rows, cols, t.data, *row_bytes, t.packed};
  if (t.packed != nullptr) {
    const uint64_t want = kernels::PackedMatrixBytes(m);
    // An ArtifactError: the model cache then exports the entry again for this build.
    if (want != t.packed_bytes) {
      throw ArtifactError(StrCat(source_.Describe(), ": tensor '", name, "' is packed in ",
                                 t.packed_bytes,
                                 " bytes for another kernel layout (this CPU's "
                                 "kernels read ",
                                 want, "); export the model again"));
    }
  }
  return m;
}

std::vector<float> TensorBinder::Vector(const std::string& name, int64_t n) const {
  const TensorView& t = Require(name);
  KILN_CHECK(t.NumElements() == n && t.shape.size() == 1, source_.Describe(), ": tensor '", name,
             "' has shape ", ShapeText(t.shape), ", expected [", n, "]");
  KILN_CHECK(t.data != nullptr, source_.Describe(), ": tensor '", name,
             "' is stored packed; vectors must be stored as they are");
  kernels::Matrix row = VectorRow(source_, t, n);
  std::vector<float> out(n);
  kernels::DequantizeRow(row, 0, out.data());
  return out;
}

}  // namespace kiln
