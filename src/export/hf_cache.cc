#include "export/hf_cache.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>
#include <vector>

#include "util/error.h"

namespace kiln::hub {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxListed = 12;  // names a message shows before "and N more"

// Thrown where the cache lacks what an id needs, so ResolveModelPath can add how to fetch it;
// other failures (a corrupt ref, an ambiguous GGUF choice) are plain kiln::Errors.
class CacheMiss : public Error {
 public:
  using Error::Error;
};

std::string Listed(const std::vector<std::string>& names) {
  if (names.empty()) return "none";
  std::string out;
  for (size_t i = 0; i < names.size() && i < kMaxListed; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > kMaxListed) out += StrCat(" and ", names.size() - kMaxListed, " more");
  return out;
}

// Paths relative to `dir` of every non-directory below it (snapshot files are symlinks), sorted.
std::vector<std::string> FilesUnder(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (!it->is_directory(ec)) out.push_back(it->path().lexically_relative(dir).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> EntriesOf(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::end(it); it.increment(ec)) {
    out.push_back(it->path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool IsGguf(const std::string& path) {
  return path.size() > 5 && Lower(path.substr(path.size() - 5)) == ".gguf";
}

// The commit refs/{revision} names. huggingface_hub writes the server's 40-hex sha there; any
// other content is refused, since it becomes a folder name under snapshots/.
std::string ReadRef(const fs::path& ref_path) {
  std::ifstream in(ref_path, std::ios::binary);
  std::string text(256, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  KILN_CHECK(IsCommitHash(text), ref_path.string(), " holds '", text.substr(0, 80),
             "', not a 40-hex commit hash: the cache is corrupt (fetch the model again)");
  return text;
}

// Whether Model::Load takes `dir` as a Hugging Face model folder.
bool IsHfModelFolder(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "config.json", ec) &&
         (fs::is_regular_file(dir / "model.safetensors", ec) ||
          fs::is_regular_file(dir / "model.safetensors.index.json", ec));
}

// The candidates `want` names: the path in the repo, else the file name, else the file names
// that contain it ignoring case (a quant type such as Q4_K_M).
std::vector<std::string> Matching(const std::vector<std::string>& ggufs, const std::string& want) {
  if (std::find(ggufs.begin(), ggufs.end(), want) != ggufs.end()) return {want};
  std::vector<std::string> by_name, by_part;
  for (const std::string& g : ggufs) {
    const std::string name = fs::path(g).filename().string();
    if (name == want) by_name.push_back(g);
    if (Lower(name).find(Lower(want)) != std::string::npos) by_part.push_back(g);
  }
  return by_name.empty() ? by_part : by_name;
}

// A snapshot file is a symlink into blobs/: a missing blob means an interrupted download.
std::string ExistingFile(const fs::path& path) {
  std::error_code ec;
  KILN_CHECK(fs::is_regular_file(path, ec), path.string(), " is a link to a missing blob (",
             fs::read_symlink(path, ec).string(),
             "): an interrupted download? Fetch the model again");
  return path.string();
}

std::string FetchHint(const HubId& id, const CacheRoot& root, bool offline) {
  std::string args = id.repo_id;
  if (id.revision != kDefaultRevision) args += " --revision " + id.revision;
  if (!id.file.empty()) args += " --include '*" + id.file + "*'";
  if (root.source.rfind("~/", 0) != 0) args += " --cache-dir " + root.path;
  return StrCat("Kiln does not download models",
                offline ? " (and HF_HUB_OFFLINE is set): where the Hub can be reached, fetch it"
                        : ": fetch it",
                " with `hf download ", args, "` (or `huggingface-cli download ", args, "`)");
}

}  // namespace

Snapshot FindSnapshot(const CacheRoot& root, const HubId& id) {
  Snapshot s;
  const fs::path repo = fs::path(root.path) / RepoFolderName(id.repo_id);
  s.repo_dir = repo.string();
  auto miss = [&](const std::string& detail) {
    return CacheMiss(StrCat("Hugging Face Hub model '", Describe(id),
                            "' is not in the local cache: ", detail, " (cache root ", root.path,
                            ", from ", root.source, ")"));
  };
  std::error_code ec;
  if (!fs::is_directory(repo, ec)) throw miss(StrCat("no repo folder ", s.repo_dir));
  std::string how = "commit " + id.revision;
  if (IsCommitHash(id.revision)) {
    s.commit = id.revision;
  } else {
    const fs::path ref = repo / "refs" / id.revision;
    if (!fs::is_regular_file(ref, ec)) {
      throw miss(StrCat("no ref ", ref.string(), " for revision '", id.revision,
                        "' (refs present: ", Listed(FilesUnder(repo / "refs")),
                        "; a commit is given as its full 40-hex hash)"));
    }
    s.commit = ReadRef(ref);
    how = StrCat("ref ", ref.string(), " names commit ", s.commit);
  }
  const fs::path snapshot = repo / "snapshots" / s.commit;
  s.dir = snapshot.string();
  if (!fs::is_directory(snapshot, ec)) {
    throw miss(StrCat(how, ", but there is no snapshot folder ", s.dir,
                      " (snapshots present: ", Listed(EntriesOf(repo / "snapshots")), ")"));
  }
  return s;
}

std::string ModelPathInSnapshot(const Snapshot& snapshot, const HubId& id) {
  const fs::path dir(snapshot.dir);
  if (id.file.empty() && IsHfModelFolder(dir)) return snapshot.dir;
  const std::vector<std::string> files = FilesUnder(dir);
  std::vector<std::string> ggufs;
  std::copy_if(files.begin(), files.end(), std::back_inserter(ggufs), IsGguf);
  const std::string where = StrCat("snapshot ", snapshot.dir, " of '", id.repo_id, "'");
  KILN_CHECK(!ggufs.empty() || !id.file.empty(), where,
             " is neither a Hugging Face model folder (config.json with model.safetensors or "
             "model.safetensors.index.json) nor holds a GGUF file; its files: ",
             Listed(files));
  if (id.file.empty()) {
    KILN_CHECK(ggufs.size() == 1, where, " holds ", ggufs.size(),
               " GGUF files: choose one by adding :FILE to the id (the path, the file name or a "
               "part of it such as a quant type, e.g. ",
               id.repo_id, ":", fs::path(ggufs[0]).filename().string(), "): ", Listed(ggufs));
    return ExistingFile(dir / ggufs[0]);
  }
  const std::vector<std::string> picked = Matching(ggufs, id.file);
  KILN_CHECK(!picked.empty(), where, " has no GGUF file matching ':", id.file,
             "'; its GGUF files: ", Listed(ggufs));
  KILN_CHECK(picked.size() == 1, where, ": ':", id.file, "' matches ", picked.size(),
             " GGUF files, give more of the name: ", Listed(picked));
  return ExistingFile(dir / picked[0]);
}

std::string ResolveModelPath(const std::string& value, const GetEnv& env) {
  std::error_code ec;
  if (!value.empty() && fs::exists(value, ec)) return value;
  HubId id;
  try {
    id = ParseHubId(value);
  } catch (const Error& e) {
    throw Error(StrCat(value, ": no such file or directory, and ", e.what()));
  }
  const CacheRoot root = HubCacheRoot(env);
  try {
    return ModelPathInSnapshot(FindSnapshot(root, id), id);
  } catch (const CacheMiss& miss) {
    throw Error(StrCat(value, ": no such local file or directory; ", miss.what(), ". ",
                       FetchHint(id, root, HubOffline(env))));
  }
}

}  // namespace kiln::hub
