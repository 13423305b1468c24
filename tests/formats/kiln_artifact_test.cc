// The Kiln artifact reader and writer: a round trip, and the malformed-artifact corpus (each
// case a clear ArtifactError, never a crash: this binary also runs under ASan+UBSan).
// KILN_WRITE_ARTIFACT_CORPUS=DIR writes every case to DIR/<case>.kiln (the fuzz seeds in
// tests/fuzz/corpus/kiln_artifact/ come from it).
#include "formats/kiln_artifact.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "formats/formats_test_util.h"
#include "formats/kiln_artifact_writer.h"

namespace kiln {
namespace {

using testing_util::Bytes;
using testing_util::TempDir;

Bytes ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

void WriteAll(const std::string& path, const Bytes& b) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), b.size());
}

// A small valid artifact: a stored f32 matrix, a "packed" region, a stored vector, two blobs.
Bytes ValidArtifact(const std::string& dir) {
  const std::string path = dir + "/valid.kiln";
  ArtifactWriter w(path);
  ArtifactManifest& m = w.manifest();
  m.kiln_version = "test";
  m.name_scheme = "gguf";
  m.target = "avx2";
  m.dtype = "source";
  m.source_kind = "gguf";
  m.source_path = "src.gguf";
  m.source_digest = "xxh3-128:0";
  m.created = "2026-12-07T00:00:00Z";
  std::vector<float> matrix(8 * 32, 0.5f), vec(32, 1.0f);
  std::vector<uint8_t> panels(1000, 7);
  w.AddBlob("gguf-metadata", "GGUF....");
  w.AddTensor("w", DType::kF32, {8, 32}, ArtifactLayout::kStored, matrix.data(), matrix.size() * 4);
  w.AddTensor("p", DType::kQ8_0, {16, 64}, ArtifactLayout::kPacked, panels.data(), panels.size());
  w.AddTensor("norm", DType::kF32, {32}, ArtifactLayout::kStored, vec.data(), vec.size() * 4);
  w.AddBlob("tokenizer.json", "{}");
  w.Finish();
  return ReadAll(path);
}

ArtifactHeader HeaderOf(const Bytes& b) {
  ArtifactHeader h;
  std::memcpy(&h, b.data(), sizeof(h));
  return h;
}

void PutHeader(Bytes& b, const ArtifactHeader& h) { std::memcpy(b.data(), &h, sizeof(h)); }

// The artifact with its manifest replaced by `text`, the header's sizes and checksum made to
// match (so that only the manifest's own checks can refuse it).
Bytes ReplaceManifestText(Bytes b, const std::string& text) {
  ArtifactHeader h = HeaderOf(b);
  b.resize(h.manifest_offset);
  b.insert(b.end(), text.begin(), text.end());
  h.manifest_bytes = text.size();
  h.file_bytes = b.size();
  h.manifest_checksum = Xxh3(text.data(), text.size());
  PutHeader(b, h);
  return b;
}

Bytes EditManifest(const Bytes& b, const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = nlohmann::json::parse(b.begin() + HeaderOf(b).manifest_offset, b.end());
  edit(j);
  return ReplaceManifestText(b, j.dump());
}

nlohmann::json& TensorNamed(nlohmann::json& j, const std::string& name) {
  for (nlohmann::json& t : j["tensors"]) {
    if (t["name"] == name) return t;
  }
  throw std::runtime_error("no tensor " + name);
}

struct Case {
  const char* name;
  std::function<Bytes(Bytes)> make;
  const char* error;  // a part of the message
};

std::vector<Case> MalformedCases() {
  return {
      {"truncated",
       [](Bytes b) {
         b.erase(b.end() - std::min<ptrdiff_t>(100, std::ssize(b)), b.end());
         return b;
       },
       "truncated"},
      {"truncated_header",
       [](Bytes b) {
         b.resize(20);
         return b;
       },
       "shorter than the artifact header"},
      {"empty", [](Bytes) { return Bytes{}; }, "truncated"},
      {"extra_bytes",
       [](Bytes b) {
         b.push_back(0);
         return b;
       },
       "bytes after the end"},
      {"wrong_magic",
       [](Bytes b) {
         b[0] = 'G';
         return b;
       },
       "wrong magic"},
      {"newer_header_version",
       [](Bytes b) {
         ArtifactHeader h = HeaderOf(b);
         h.format_version = 2;
         PutHeader(b, h);
         return b;
       },
       "newer than this kiln reads"},
      {"newer_manifest_version",
       [](Bytes b) { return EditManifest(b, [](auto& j) { j["format_version"] = 2; }); },
       "format version 2"},
      {"manifest_checksum",
       [](Bytes b) {
         b[HeaderOf(b).manifest_offset + 3] ^= 1;
         return b;
       },
       "manifest checksum"},
      {"manifest_range",
       [](Bytes b) {
         ArtifactHeader h = HeaderOf(b);
         h.manifest_bytes = b.size();
         PutHeader(b, h);
         return b;
       },
       "manifest range"},
      {"invalid_json", [](Bytes b) { return ReplaceManifestText(b, "{\"format\": "); },
       "invalid JSON"},
      {"deep_json", [](Bytes b) { return ReplaceManifestText(b, std::string(5000, '[')); },
       "nested deeper"},
      {"not_kiln_format",
       [](Bytes b) { return EditManifest(b, [](auto& j) { j["format"] = "gguf"; }); },
       "kiln-artifact"},
      {"missing_field",
       [](Bytes b) { return EditManifest(b, [](auto& j) { j.erase("tensors"); }); },
       "'tensors' is missing"},
      {"offset_out_of_range",
       [](Bytes b) {
         return EditManifest(b, [](auto& j) { TensorNamed(j, "w")["offset"] = 1ull << 40; });
       },
       "out of range"},
      {"offset_overflow",
       [](Bytes b) {
         return EditManifest(
             b, [](auto& j) { TensorNamed(j, "p")["offset"] = 0xFFFFFFFFFFFFF000ull; });
       },
       "out of range"},
      {"size_out_of_range",
       [](Bytes b) {
         return EditManifest(b, [](auto& j) { TensorNamed(j, "p")["bytes"] = 1ull << 40; });
       },
       "out of range"},
      {"offset_in_header",
       [](Bytes b) { return EditManifest(b, [](auto& j) { TensorNamed(j, "w")["offset"] = 0; }); },
       "out of range"},
      {"unaligned_offset",
       [](Bytes b) {
         return EditManifest(b, [](auto& j) {
           TensorNamed(j, "w")["offset"] = j["tensors"][0]["offset"].template get<uint64_t>() + 8;
         });
       },
       "not page-aligned"},
      {"overlapping_tensors",
       [](Bytes b) {
         return EditManifest(
             b, [](auto& j) { TensorNamed(j, "norm")["offset"] = TensorNamed(j, "w")["offset"]; });
       },
       "overlap"},
      {"duplicate_name",
       [](Bytes b) {
         return EditManifest(b, [](auto& j) { TensorNamed(j, "norm")["name"] = "w"; });
       },
       "two tensors named 'w'"},
      {"stored_size_mismatch",
       [](Bytes b) {
         return EditManifest(b, [](auto& j) { TensorNamed(j, "w")["shape"] = {8, 31}; });
       },
       "its shape and dtype take"},
      {"partial_block",
       [](Bytes b) {
         return EditManifest(b, [](auto& j) { TensorNamed(j, "p")["shape"] = {16, 60}; });
       },
       "whole number of q8_0 blocks"},
      {"unknown_dtype",
       [](Bytes b) {
         return EditManifest(b, [](auto& j) { TensorNamed(j, "w")["dtype"] = "q3_K"; });
       },
       "unknown dtype"},
      {"bad_shape",
       [](Bytes b) {
         return EditManifest(b, [](auto& j) { TensorNamed(j, "w")["shape"] = {8, -32}; });
       },
       "shape dimensions"},
      {"bad_checksum_text",
       [](Bytes b) {
         return EditManifest(b, [](auto& j) { TensorNamed(j, "w")["xxh3"] = "xyz"; });
       },
       "16 hex digits"},
      {"bad_name_scheme",
       [](Bytes b) { return EditManifest(b, [](auto& j) { j["name_scheme"] = "onnx"; }); },
       "name_scheme"},
  };
}

TEST(KilnArtifact, RoundTrip) {
  TempDir dir;
  ValidArtifact(dir.path());
  ArtifactFile a(dir.path() + "/valid.kiln");
  EXPECT_TRUE(IsArtifactFile(a.path()));
  const ArtifactManifest& m = a.manifest();
  EXPECT_EQ(m.format_version, kArtifactFormatVersion);
  EXPECT_EQ(m.target, "avx2");
  ASSERT_EQ(m.tensors.size(), 3u);
  const TensorView* w = a.Find("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->nbytes, 8u * 32 * 4);
  EXPECT_EQ(reinterpret_cast<const float*>(w->data)[5], 0.5f);
  const TensorView* p = a.Find("p");
  EXPECT_EQ(p->data, nullptr);
  EXPECT_EQ(p->packed_bytes, 1000u);
  EXPECT_EQ(p->nbytes, 16u * 2 * 34);
  EXPECT_EQ(p->packed[999], 7);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p->packed) % kArtifactPageBytes, 0u);
  EXPECT_EQ(a.Blob("tokenizer.json").value(), "{}");
  EXPECT_FALSE(a.Blob("nope").has_value());
  a.VerifyChecksums(2);
}

TEST(KilnArtifact, MalformedCorpusGivesClearErrors) {
  TempDir dir;
  const Bytes valid = ValidArtifact(dir.path());
  const char* corpus = std::getenv("KILN_WRITE_ARTIFACT_CORPUS");
  if (corpus != nullptr) WriteAll(std::string(corpus) + "/valid.kiln", valid);
  for (const Case& c : MalformedCases()) {
    SCOPED_TRACE(c.name);
    const Bytes bytes = c.make(valid);
    const std::string path = dir.path() + "/" + c.name + ".kiln";
    WriteAll(path, bytes);
    if (corpus != nullptr) WriteAll(std::string(corpus) + "/" + c.name + ".kiln", bytes);
    try {
      ArtifactFile a(path);
      ADD_FAILURE() << "accepted";
    } catch (const ArtifactError& e) {
      EXPECT_NE(std::string(e.what()).find(c.error), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
}

TEST(KilnArtifact, ChecksumMismatchIsFoundByVerify) {
  TempDir dir;
  Bytes b = ValidArtifact(dir.path());
  ArtifactFile ok(dir.path() + "/valid.kiln");
  b[ok.manifest().tensors[1].offset + 500] ^= 0x40;  // inside "p"
  const std::string path = dir.path() + "/flipped.kiln";
  WriteAll(path, b);
  if (const char* corpus = std::getenv("KILN_WRITE_ARTIFACT_CORPUS")) {
    WriteAll(std::string(corpus) + "/checksum_mismatch.kiln", b);
  }
  ArtifactFile a(path);  // the structure is intact
  try {
    a.VerifyChecksums(2);
    ADD_FAILURE() << "verified";
  } catch (const ArtifactError& e) {
    EXPECT_NE(std::string(e.what()).find("checksum mismatch in 'p'"), std::string::npos)
        << e.what();
  }
}

TEST(KilnArtifact, NotAnArtifact) {
  TempDir dir;
  WriteAll(dir.path() + "/x.gguf", Bytes{'G', 'G', 'U', 'F', 3, 0, 0, 0});
  EXPECT_FALSE(IsArtifactFile(dir.path() + "/x.gguf"));
  EXPECT_FALSE(IsArtifactFile(dir.path() + "/missing"));
  EXPECT_THROW(ArtifactFile(dir.path() + "/missing"), Error);
}

}  // namespace
}  // namespace kiln
