// The admin routes of a multi-model server, behind the API key (refused without one):
//   GET    /admin/models              every model with its state (as /v1/models' data)
//   POST   /admin/models              {"name", "source", "cores"?, "kv_cache_dtype"?}: loads
//                                     one (201 when ready, 409 if the name is taken, 422 if it
//                                     cannot be loaded)
//   DELETE /admin/models/NAME[?timeout=S]  stops routing to it, waits up to S seconds (default:
//                                     the drain timeout) for its requests, then ends the rest
//                                     (their streams get an error event) and frees it
// Loads and unloads run on a thread of their own, one at a time; the I/O threads never wait.
#include <algorithm>

#include "api/api_error.h"
#include "api/json_output.h"
#include "server/server.h"
#include "util/bearer_token.h"
#include "util/error.h"
#include "util/log.h"

namespace kiln {
namespace {

constexpr std::string_view kAdmin = "/admin/models";

nlohmann::json ErrorJson(const std::string& message, const std::string& type) {
  return {{"error", message}, {"error_type", type}};
}

std::string StringField(const nlohmann::json& body, const char* key, bool required) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) {
    KILN_CHECK(!required, "missing field `", key, "`");
    return "";
  }
  KILN_CHECK(it->is_string(), "`", key, "` must be a string");
  return it->get<std::string>();
}

// "timeout=S" in a query string, in milliseconds; `fallback` when absent or not a number.
std::chrono::milliseconds QueryTimeout(const std::string& query,
                                       std::chrono::milliseconds fallback) {
  const size_t at = query.find("timeout=");
  if (at == std::string::npos) return fallback;
  char* end = nullptr;
  const double s = std::strtod(query.c_str() + at + 8, &end);
  if (end == query.c_str() + at + 8 || !(s >= 0) || s > 3600) return fallback;
  return std::chrono::milliseconds(static_cast<int64_t>(s * 1000));
}

void Answer(const std::shared_ptr<http::Exchange>& exchange, int status,
            const nlohmann::json& body) {
  http::Response r;
  r.status = status;
  r.content_type = "application/json";
  r.body = api::DumpJson(body);
  exchange->Respond(std::move(r));
}

}  // namespace

bool Server::HandleAdmin(http::Request& request, std::shared_ptr<http::Exchange>& exchange) {
  if (std::string_view(request.path).substr(0, kAdmin.size()) != kAdmin) return false;
  const std::string rest = request.path.substr(kAdmin.size());
  if (!rest.empty() && rest[0] != '/') return false;
  const ServerConfig& c = front_->config;
  if (c.api_key.empty()) {
    Answer(exchange, 403,
           ErrorJson("the admin routes need an API key (kiln serve --api-key)", "forbidden"));
    return true;
  }
  if (!BearerTokenMatches(request.Header("authorization"), c.api_key)) {
    Answer(exchange, 401,
           ErrorJson("Unauthorized: send `Authorization: Bearer <api-key>`", "authentication"));
    return true;
  }
  if (rest.empty() && (request.method == "GET" || request.method == "HEAD")) {
    Answer(exchange, 200, {{"models", ModelList()}});
    return true;
  }
  if (rest.empty() && request.method == "POST") {
    ModelRequest m;
    try {
      const nlohmann::json body = nlohmann::json::parse(request.body, nullptr, false);
      KILN_CHECK(body.is_object(), "the body must be a JSON object");
      m.name = StringField(body, "name", true);
      m.source = StringField(body, "source", true);
      m.cores = StringField(body, "cores", false);
      m.kv_cache_dtype = StringField(body, "kv_cache_dtype", false);
      KILN_CHECK(!m.name.empty() && m.name.find('/') == std::string::npos,
                 "`name` must be non-empty and hold no '/'");
      KILN_CHECK(loader_ != nullptr, "this server cannot load models");
    } catch (const Error& e) {
      Answer(exchange, 422, ErrorJson(e.what(), "validation"));
      return true;
    }
    for (const auto& h : Snapshot()) {
      if (h->name == m.name) {
        Answer(exchange, 409,
               ErrorJson(StrCat("a model named `", m.name, "` is already here (", h->status, ")"),
                         "conflict"));
        return true;
      }
    }
    std::lock_guard lock(workers_mu_);
    workers_.emplace_back([this, m, exchange] { LoadModel(m, exchange); });
    return true;
  }
  if (rest.size() > 1 && request.method == "DELETE") {
    const std::string name = rest.substr(1);
    const auto drain = QueryTimeout(request.query, c.drain_timeout);
    std::lock_guard lock(workers_mu_);
    workers_.emplace_back([this, name, drain, exchange] { UnloadModel(name, drain, exchange); });
    return true;
  }
  Answer(exchange, 405, ErrorJson("Method Not Allowed", "method_not_allowed"));
  return true;
}

void Server::LoadModel(ModelRequest request, std::shared_ptr<http::Exchange> exchange) {
  std::lock_guard admin(admin_mu_);
  auto placeholder = std::make_shared<Hosted>();
  placeholder->name = request.name;
  placeholder->request = request;
  placeholder->status = "loading";
  {
    std::lock_guard lock(mu_);
    for (const auto& h : models_) {
      if (h->name == request.name) {
        return Answer(
            exchange, 409,
            ErrorJson(StrCat("a model named `", request.name, "` is already here"), "conflict"));
      }
    }
    models_.push_back(placeholder);
  }
  log::Info(StrCat("admin: loading ", request.name, " from ", request.source));
  std::shared_ptr<Hosted> loaded;
  std::string error;
  try {
    std::shared_ptr<LoadedModel> owner = loader_(request);
    loaded = MakeHosted(owner->hosted, owner);
    loaded->request = request;
  } catch (const std::exception& e) {
    error = e.what();
  }
  {
    std::lock_guard lock(mu_);
    for (auto& h : models_) {
      if (h == placeholder) h = loaded;
    }
    std::erase(models_, nullptr);
  }
  if (loaded == nullptr) {
    log::Warn(StrCat("admin: ", request.name, " did not load: ", error));
    return Answer(exchange, 422, ErrorJson(error, "validation"));
  }
  log::Info(StrCat("admin: ", request.name, " loaded"));
  for (const nlohmann::json& card : ModelList()) {
    if (card["id"] == request.name) return Answer(exchange, 201, {{"model", card}});
  }
}

void Server::UnloadModel(const std::string& name, std::chrono::milliseconds drain,
                         std::shared_ptr<http::Exchange> exchange) {
  std::lock_guard admin(admin_mu_);
  std::shared_ptr<Hosted> gone;
  {
    std::lock_guard lock(mu_);
    auto it = std::find_if(models_.begin(), models_.end(),
                           [&](const auto& h) { return h->name == name; });
    if (it == models_.end()) {
      return Answer(exchange, 404,
                    ErrorJson(StrCat("The model `", name, "` does not exist."), "not_found"));
    }
    if ((*it)->owner == nullptr && (*it)->state != nullptr) {
      return Answer(exchange, 409,
                    ErrorJson(StrCat("`", name, "` is not the server's to unload"), "conflict"));
    }
    gone = *it;
    models_.erase(it);  // no new request reaches it from here on
  }
  log::Info(StrCat("admin: unloading ", name, " (draining up to ", drain.count() / 1000.0, " s)"));
  bool drained = true;
  if (gone->state != nullptr) {
    gone->state->draining = true;
    const auto deadline = std::chrono::steady_clock::now() + drain;
    while (gone->state->admission.in_flight() > 0 && std::chrono::steady_clock::now() < deadline &&
           !stopping_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    drained = gone->state->admission.in_flight() == 0;
  }
  if (gone->owner != nullptr) {
    gone->owner->Shutdown();  // what is still running ends now, with an error event
    std::lock_guard lock(mu_);
    retired_.push_back(gone->owner);
  }
  log::Info(StrCat("admin: ", name, " unloaded", drained ? "" : " (requests cut short)"));
  Answer(exchange, 200, {{"unloaded", name}, {"drained", drained}});
}

void Server::RetryFailed() {
  while (!stopping_) {
    const auto until = std::chrono::steady_clock::now() + retry_;
    while (!stopping_ && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (stopping_) return;
    std::lock_guard admin(admin_mu_);
    bool any_failed = false;
    for (const auto& h : Snapshot()) {
      if (h->status != "failed") continue;
      try {
        std::shared_ptr<LoadedModel> owner = loader_(h->request);
        std::shared_ptr<Hosted> loaded = MakeHosted(owner->hosted, owner);
        loaded->request = h->request;
        std::lock_guard lock(mu_);
        std::replace(models_.begin(), models_.end(), h, loaded);
        log::Info(StrCat(h->name, ": loaded on retry"));
      } catch (const std::exception& e) {
        any_failed = true;
        auto again = std::make_shared<Hosted>(*h);  // entries are never changed in place
        again->error = e.what();
        std::lock_guard lock(mu_);
        std::replace(models_.begin(), models_.end(), h, again);
      }
    }
    if (!any_failed) return;
  }
}

}  // namespace kiln
