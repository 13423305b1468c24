// kiln export: an artifact runs bit-identically to the source it came from, for every weight
// dtype, both name schemes, tied heads, dtype conversion and a target other than the CPU's best;
// and what Model::Load refuses.
#include "export/exporter.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <numeric>
#include <vector>

#include "export/tiny_model.h"
#include "formats/kiln_artifact.h"
#include "formats/kiln_artifact_writer.h"
#include "kernels/target.h"
#include "model/model.h"
#include "model/paged_kv_cache.h"
#include "util/thread_pool.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing_util::TinyModelShape;

class ExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("kiln_export_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    fs::remove_all(dir_);
    kernels::UseTarget(kernels::NativeTarget());  // a test may have pinned another target
  }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

// Logits of a 19-token prefill (every position) and then of two decode steps, concatenated.
std::vector<float> RunLogits(const std::string& path) {
  std::unique_ptr<Model> model = Model::Load(path);
  const ModelConfig& c = model->config();
  PagedKvCache kv(c, 8, 16);
  ThreadPool pool({}, /*pin=*/false);
  std::vector<int32_t> prompt(19);
  std::iota(prompt.begin(), prompt.end(), 3);
  std::vector<float> out(prompt.size() * c.vocab_size + 2 * c.vocab_size);
  model->ForwardSequence(prompt, 0, kv, pool, /*all_logits=*/true, out.data());
  float* decode = out.data() + prompt.size() * c.vocab_size;
  for (int step = 0; step < 2; ++step) {
    const int32_t token = 40 + step;
    model->ForwardSequence({&token, 1}, static_cast<int64_t>(prompt.size()) + step, kv, pool, false,
                           decode + step * c.vocab_size);
  }
  return out;
}

void ExpectBitIdentical(const std::vector<float>& a, const std::vector<float>& b) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(std::isnan(a[i]), false) << i;
}

class ExportDTypeTest : public ExportTest, public ::testing::WithParamInterface<DType> {};

TEST_P(ExportDTypeTest, GgufArtifactLogitsAreBitIdentical) {
  testing_util::WriteTinyLlama(Path("src.gguf"), GetParam());
  const ExportResult r = ExportModel(Path("src.gguf"), Path("out.kiln"), {});
  EXPECT_EQ(r.target, kernels::NativeTarget());
  EXPECT_GT(r.tensors, 0);
  if (r.target != "scalar") {
    EXPECT_EQ(r.packed_tensors, 15);  // 2 layers x 7, the head
  }
  ExpectBitIdentical(RunLogits(Path("src.gguf")), RunLogits(Path("out.kiln")));
}

TEST_P(ExportDTypeTest, TiedHeadLogitsAreBitIdentical) {
  TinyModelShape shape;
  shape.tied = true;
  testing_util::WriteTinyLlama(Path("src.gguf"), GetParam(), shape);
  ExportModel(Path("src.gguf"), Path("out.kiln"), {});
  ExpectBitIdentical(RunLogits(Path("src.gguf")), RunLogits(Path("out.kiln")));
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, ExportDTypeTest,
                         ::testing::Values(DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0,
                                           DType::kQ4_0, DType::kQ4_1),
                         [](const auto& info) {
                           return std::string(GetDTypeInfo(info.param).name);
                         });

TEST_F(ExportTest, HuggingFaceFolderLogitsAreBitIdentical) {
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    fs::create_directories(dir_ / "hf");
    TinyModelShape shape;
    shape.tied = dtype == DType::kBF16;
    testing_util::WriteTinyHfLlama(Path("hf"), dtype, shape);
    ExportModel(Path("hf"), Path("hf.kiln"), {});
    ArtifactFile a(Path("hf.kiln"));
    EXPECT_EQ(a.manifest().name_scheme, "huggingface");
    EXPECT_TRUE(a.Blob("config.json").has_value());
    ExpectBitIdentical(RunLogits(Path("hf")), RunLogits(Path("hf.kiln")));
  }
}

// --dtype q4_0 from f32 weights equals the same weights quantized into a GGUF and loaded as is.
TEST_F(ExportTest, ConvertedDTypeMatchesTheSameQuantizationInAGguf) {
  for (DType to : {DType::kQ4_0, DType::kQ8_0, DType::kBF16}) {
    testing_util::WriteTinyLlama(Path("f32.gguf"), DType::kF32);
    testing_util::WriteTinyLlama(Path("direct.gguf"), to);
    ExportOptions o;
    o.dtype = std::string(GetDTypeInfo(to).name);
    ExportModel(Path("f32.gguf"), Path("conv.kiln"), o);
    ArtifactFile a(Path("conv.kiln"));
    EXPECT_EQ(a.Find("blk.0.attn_q.weight")->dtype, to);
    EXPECT_EQ(a.Find("token_embd.weight")->dtype, to);
    EXPECT_EQ(a.Find("blk.0.attn_norm.weight")->dtype, DType::kF32);
    ExpectBitIdentical(RunLogits(Path("direct.gguf")), RunLogits(Path("conv.kiln")));
  }
}

TEST_F(ExportTest, WeakerTargetRunsPinnedToIt) {
  if (!kernels::TargetUnsupportedReason("avx2").empty() || kernels::NativeTarget() == "avx2") {
    GTEST_SKIP() << "needs a CPU better than AVX2";
  }
  testing_util::WriteTinyLlama(Path("src.gguf"), DType::kQ4_0);
  ExportOptions o;
  o.target = "avx2";
  ExportModel(Path("src.gguf"), Path("avx2.kiln"), o);
  EXPECT_EQ(kernels::ActiveTarget(), "avx2");
  kernels::UseTarget(kernels::NativeTarget());
  const std::vector<float> artifact = RunLogits(Path("avx2.kiln"));  // pins avx2 again
  EXPECT_EQ(kernels::ActiveTarget(), "avx2");
  ExpectBitIdentical(RunLogits(Path("src.gguf")), artifact);
}

TEST_F(ExportTest, ManifestRecordsOptionsAndEnvelope) {
  testing_util::WriteTinyLlama(Path("src.gguf"), DType::kQ8_0);
  ExportOptions o;
  o.batch_size = 4;
  o.sequence_length = 128;
  ExportModel(Path("src.gguf"), Path("out.kiln"), o);
  ArtifactFile a(Path("out.kiln"));
  const ArtifactManifest& m = a.manifest();
  EXPECT_EQ(m.batch_size, 4);
  EXPECT_EQ(m.sequence_length, 128);
  EXPECT_EQ(m.source_kind, "gguf");
  EXPECT_EQ(m.source_digest.rfind("xxh3-128:", 0), 0u);
  EXPECT_EQ(m.source_bytes, fs::file_size(Path("src.gguf")));
  EXPECT_TRUE(a.Blob("gguf-metadata").has_value());
  for (const ArtifactTensor& t : m.tensors) EXPECT_EQ(t.offset % kArtifactPageBytes, 0u);
  a.VerifyChecksums(2);
}

TEST_F(ExportTest, RefusesBadOptions) {
  testing_util::WriteTinyLlama(Path("src.gguf"), DType::kQ8_0);
  ExportOptions o;
  o.dtype = "q4_K";
  EXPECT_THROW(ExportModel(Path("src.gguf"), Path("out.kiln"), o), Error);
  o = {};
  o.target = "sparc";
  EXPECT_THROW(ExportModel(Path("src.gguf"), Path("out.kiln"), o), Error);
  o = {};
  o.sequence_length = 100000;  // past the context of 256
  EXPECT_THROW(ExportModel(Path("src.gguf"), Path("out.kiln"), o), Error);
  EXPECT_THROW(ExportModel(Path("missing.gguf"), Path("out.kiln"), {}), Error);
  EXPECT_FALSE(fs::exists(Path("out.kiln")));
  ExportModel(Path("src.gguf"), Path("out.kiln"), {});
  EXPECT_THROW(ExportModel(Path("out.kiln"), Path("again.kiln"), {}), Error);
  // No temporary file is left behind.
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().string().find(".tmp-"), std::string::npos) << e.path();
  }
}

// An artifact for a target this CPU cannot run is refused before anything is mapped into the
// kernels, with the reason.
TEST_F(ExportTest, UnsupportedTargetIsRefused) {
  std::string target;
  for (const std::string& t : kernels::TargetNames()) {
    if (!kernels::TargetUnsupportedReason(t).empty()) target = t;
  }
  if (target.empty()) GTEST_SKIP() << "this CPU runs every target";
  testing_util::WriteTinyLlama(Path("src.gguf"), DType::kF32);
  ExportModel(Path("src.gguf"), Path("native.kiln"), {});
  ArtifactFile native(Path("native.kiln"));
  ArtifactWriter w(Path("foreign.kiln"));
  w.manifest() = native.manifest();
  w.manifest().tensors.clear();
  w.manifest().blobs.clear();
  w.manifest().target = target;
  w.Finish();
  try {
    Model::Load(Path("foreign.kiln"));
    ADD_FAILURE() << "loaded";
  } catch (const ArtifactError& e) {
    EXPECT_NE(std::string(e.what()).find("exported for target " + target), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace kiln
