// The static web UI (GET /, GET /ui/...) and the OpenAPI document, served from memory.

#include <map>
#include <mutex>

#include "impl/assets.hpp"
#include "impl/context.hpp"
#include "sched/web/sha256.hpp"

namespace sched::web::impl {

namespace {

std::string ContentType(std::string_view path) {
    const auto dot = path.rfind('.');
    const auto ext = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
    if (ext == "html") return "text/html; charset=utf-8";
    if (ext == "css") return "text/css; charset=utf-8";
    // ES modules are only run when served with a JavaScript MIME type.
    if (ext == "js" || ext == "mjs") return "text/javascript; charset=utf-8";
    if (ext == "json") return "application/json";
    if (ext == "svg") return "image/svg+xml";
    if (ext == "png") return "image/png";
    if (ext == "ico") return "image/x-icon";
    if (ext == "txt") return "text/plain; charset=utf-8";
    return "application/octet-stream";
}

const std::map<std::string, Asset, std::less<>>& Assets() {
    static const std::map<std::string, Asset, std::less<>> kAssets = [] {
        std::map<std::string, Asset, std::less<>> out;
        for (const auto& f : EmbeddedFiles()) {
            const std::string_view body(reinterpret_cast<const char*>(f.data), f.size);
            out.emplace(f.path, Asset{body, ContentType(f.path), "\"" + Sha256Hex(body).substr(0, 32) + "\""});
        }
        return out;
    }();
    return kAssets;
}

http::Response Serve(const http::Request& req, std::string_view path) {
    const Asset* asset = FindAsset(path);
    if (asset == nullptr) {
        return http::Response::Error(http::ApiError{Code::kNotFound, "no such file: " + std::string(path), ""});
    }
    http::Response r;
    if (auto match = req.headers.Get("If-None-Match"); match && *match == asset->etag) {
        r.status = 304;
    } else {
        r.body = std::string(asset->body);
        r.headers.Set("Content-Type", asset->content_type);
    }
    r.headers.Set("ETag", asset->etag);
    // Revalidate every time: a new build must never run against a stale cached module.
    r.headers.Set("Cache-Control", "no-cache");
    r.headers.Set("X-Content-Type-Options", "nosniff");
    r.headers.Set("Referrer-Policy", "no-referrer");
    if (asset->content_type.rfind("text/html", 0) == 0) {
        // Everything the UI loads comes from this origin; no inline script can run.
        r.headers.Set("Content-Security-Policy",
                      "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
                      "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'");
        r.headers.Set("X-Frame-Options", "DENY");
    }
    return r;
}

}  // namespace

const Asset* FindAsset(std::string_view path) {
    const auto& assets = Assets();
    const auto it = assets.find(path);
    return it == assets.end() ? nullptr : &it->second;
}

void AddUiRoutes(Routes& routes) {
    routes.Add(http::Method::kGet, "/api/v1/openapi.json", Permission::kPublic,
               [](http::Request& req, const Principal&) -> net::awaitable<http::Response> {
                   co_return Serve(req, "openapi.json");
               });
    if (!routes.context()->options.ui) return;
    routes.Add(http::Method::kGet, "/", Permission::kPublic, kAnyQuery,
               [](http::Request& req, const Principal&) -> net::awaitable<http::Response> {
                   co_return Serve(req, "ui/index.html");
               });
    routes.Add(http::Method::kGet, "/ui/{path...}", Permission::kPublic, kAnyQuery,
               [](http::Request& req, const Principal&) -> net::awaitable<http::Response> {
                   const std::string path = "ui/" + std::string(req.PathParam("path"));
                   co_return Serve(req, path);
               });
}

}  // namespace sched::web::impl
