// The artifact manifest <-> JSON. Every field is type-checked on the way in, so that the
// structural checks of kiln_artifact.cc see only well-typed values.
#include <xxhash.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "formats/kiln_artifact.h"
#include "util/json_depth.h"

namespace kiln {
namespace {

using nlohmann::json;

constexpr int kMaxManifestDepth = 16;

const char* LayoutName(ArtifactLayout l) {
  return l == ArtifactLayout::kPacked ? "packed" : "stored";
}

json RegionJson(const ArtifactRegion& r) {
  return json{{"name", r.name},
              {"offset", r.offset},
              {"bytes", r.bytes},
              {"xxh3", ChecksumHex(r.checksum)}};
}

class Fields {
 public:
  Fields(const json& j, std::string where) : j_(j), where_(std::move(where)) {
    if (!j_.is_object()) Fail("must be a JSON object");
  }

  [[noreturn]] void Fail(const std::string& what) const {
    throw ArtifactError(StrCat(where_, ": ", what));
  }

  const json& Get(const char* key) const {
    auto it = j_.find(key);
    if (it == j_.end()) Fail(StrCat("manifest field '", key, "' is missing"));
    return *it;
  }

  std::string String(const char* key) const {
    const json& v = Get(key);
    if (!v.is_string()) Fail(StrCat("manifest field '", key, "' must be a string"));
    return v.get<std::string>();
  }

  uint64_t Unsigned(const char* key) const {
    const json& v = Get(key);
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) {
      Fail(StrCat("manifest field '", key, "' must be a non-negative integer"));
    }
    return v.get<uint64_t>();
  }

  int64_t NonNegative(const char* key) const {
    const uint64_t v = Unsigned(key);
    if (v > static_cast<uint64_t>(INT64_MAX))
      Fail(StrCat("manifest field '", key, "' is too large"));
    return static_cast<int64_t>(v);
  }

  uint64_t Checksum(const char* key) const {
    const std::string hex = String(key);
    uint64_t v = 0;
    if (hex.size() != 16) Fail(StrCat("manifest field '", key, "' must be 16 hex digits"));
    for (char c : hex) {
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) Fail(StrCat("manifest field '", key, "' must be 16 lowercase hex digits"));
      v = v << 4 | static_cast<uint64_t>(d);
    }
    return v;
  }

  const json& Array(const char* key) const {
    const json& v = Get(key);
    if (!v.is_array()) Fail(StrCat("manifest field '", key, "' must be an array"));
    return v;
  }

 private:
  const json& j_;
  std::string where_;
};

void ReadRegion(const Fields& f, ArtifactRegion& r) {
  r.name = f.String("name");
  r.offset = f.Unsigned("offset");
  r.bytes = f.Unsigned("bytes");
  r.checksum = f.Checksum("xxh3");
}

ArtifactTensor ReadTensor(const json& j, const std::string& where) {
  const Fields f(j, where);
  ArtifactTensor t;
  ReadRegion(f, t);
  const Fields named(j, StrCat(where, " '", t.name, "'"));
  const std::string dtype = named.String("dtype");
  const std::optional<DType> d = DTypeFromName(dtype);
  if (!d) named.Fail(StrCat("unknown dtype '", dtype, "'"));
  t.dtype = *d;
  const std::string layout = named.String("layout");
  if (layout == "packed") {
    t.layout = ArtifactLayout::kPacked;
  } else if (layout == "stored") {
    t.layout = ArtifactLayout::kStored;
  } else {
    named.Fail(StrCat("unknown layout '", layout, "' (stored or packed)"));
  }
  const json& shape = named.Array("shape");
  if (shape.empty() || shape.size() > 4) named.Fail("shape must have 1 to 4 dimensions");
  for (const json& d : shape) {
    if (!d.is_number_unsigned() || d.get<uint64_t>() == 0 ||
        d.get<uint64_t>() > (uint64_t{1} << 40)) {
      named.Fail("shape dimensions must be integers in 1..2^40");
    }
    t.shape.push_back(d.get<int64_t>());
  }
  return t;
}

}  // namespace

uint64_t Xxh3(const void* data, size_t bytes) { return XXH3_64bits(data, bytes); }

std::string ChecksumHex(uint64_t checksum) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(checksum));
  return buf;
}

std::string ManifestToJson(const ArtifactManifest& m) {
  json tensors = json::array(), blobs = json::array();
  for (const ArtifactTensor& t : m.tensors) {
    json j = RegionJson(t);
    j["dtype"] = std::string(GetDTypeInfo(t.dtype).name);
    j["shape"] = t.shape;
    j["layout"] = LayoutName(t.layout);
    tensors.push_back(std::move(j));
  }
  for (const ArtifactRegion& b : m.blobs) blobs.push_back(RegionJson(b));
  const json out{
      {"format", "kiln-artifact"},
      {"format_version", m.format_version},
      {"kiln_version", m.kiln_version},
      {"created", m.created},
      {"source",
       {{"kind", m.source_kind},
        {"path", m.source_path},
        {"digest", m.source_digest},
        {"bytes", m.source_bytes}}},
      {"options",
       {{"dtype", m.dtype},
        {"target", m.target},
        {"batch_size", m.batch_size},
        {"sequence_length", m.sequence_length}}},
      {"name_scheme", m.name_scheme},
      {"tensors", std::move(tensors)},
      {"blobs", std::move(blobs)},
  };
  return out.dump(1);
}

ArtifactManifest ManifestFromJson(std::string_view text, const std::string& where) {
  const std::string ctx = where + ": manifest";
  if (JsonNestingDepth(text, kMaxManifestDepth) > kMaxManifestDepth) {
    throw ArtifactError(StrCat(ctx, ": nested deeper than ", kMaxManifestDepth));
  }
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw ArtifactError(StrCat(ctx, ": invalid JSON"));
  const Fields top(j, ctx);
  if (top.String("format") != "kiln-artifact") top.Fail("'format' is not \"kiln-artifact\"");
  ArtifactManifest m;
  const uint64_t version = top.Unsigned("format_version");
  if (version == 0 || version > kArtifactFormatVersion) {
    top.Fail(StrCat("format version ", version, " is not one this kiln reads (1..",
                    kArtifactFormatVersion, ")"));
  }
  m.format_version = static_cast<uint32_t>(version);
  m.kiln_version = top.String("kiln_version");
  m.created = top.String("created");
  const Fields source(top.Get("source"), ctx + " source");
  m.source_kind = source.String("kind");
  m.source_path = source.String("path");
  m.source_digest = source.String("digest");
  m.source_bytes = source.Unsigned("bytes");
  const Fields options(top.Get("options"), ctx + " options");
  m.dtype = options.String("dtype");
  m.target = options.String("target");
  m.batch_size = options.NonNegative("batch_size");
  m.sequence_length = options.NonNegative("sequence_length");
  m.name_scheme = top.String("name_scheme");
  if (m.name_scheme != "huggingface" && m.name_scheme != "gguf") {
    top.Fail(StrCat("unknown name_scheme '", m.name_scheme, "'"));
  }
  for (const json& t : top.Array("tensors")) m.tensors.push_back(ReadTensor(t, ctx + " tensor"));
  for (const json& b : top.Array("blobs")) {
    ArtifactRegion r;
    ReadRegion(Fields(b, ctx + " blob"), r);
    m.blobs.push_back(std::move(r));
  }
  return m;
}

}  // namespace kiln
