// file:// URIs and local paths, both ways (RFC 8089 as editors write them: percent-encoded,
// "file:///abs/path").
#pragma once

#include <optional>
#include <string>

namespace kblaster::server {

/// The local path of a file:// URI; nullopt for other schemes (untitled:, git:, ...).
std::optional<std::string> uri_to_path(const std::string& uri);

/// A file:// URI for an absolute path, percent-encoding what RFC 3986 does not allow.
std::string path_to_uri(const std::string& path);

}  // namespace kblaster::server
