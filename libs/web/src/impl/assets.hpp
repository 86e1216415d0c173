#pragma once

// The files under libs/web/assets/, compiled into the binary (cmake/EmbedAssets.cmake).

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace sched::web::impl {

struct EmbeddedFile {
    const char* path;  // relative to libs/web/assets/, '/'-separated: "ui/index.html", "openapi.json"
    const unsigned char* data;
    std::size_t size;
};

/// Every embedded file, sorted by path (generated).
const std::vector<EmbeddedFile>& EmbeddedFiles();

/// An embedded file ready to serve.
struct Asset {
    std::string_view body;
    std::string content_type;
    std::string etag;  // quoted strong validator from the content's SHA-256
};

/// The asset at `path`, or nullptr. Thread-safe.
const Asset* FindAsset(std::string_view path);

}  // namespace sched::web::impl
