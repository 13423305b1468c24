// The tensors of an export: each matrix the forward pass multiplies by is converted to the
// export's dtype and packed into the active kernels target's panels (kernels::PackMatrix);
// the embedding is converted but stored row by row (rows are looked up); everything else is
// copied as stored. A tied LM head gets its own packed copy, as Model::Load makes one.
#pragma once

#include <string>

#include "formats/kiln_artifact_writer.h"
#include "formats/tensor.h"
#include "model/config.h"
#include "model/weights.h"

namespace kiln {

struct PackedTensorCounts {
  int tensors = 0;
  int packed = 0;
};

// `dtype`: "source" or a DType name (CheckExportDType). Writes the tensors in source order.
PackedTensorCounts WritePackedTensors(const WeightSource& source, const ModelConfig& config,
                                      NameScheme scheme, const std::string& dtype,
                                      ArtifactWriter& writer);

}  // namespace kiln
