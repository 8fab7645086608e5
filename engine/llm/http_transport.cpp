// libcurl POST. curl_global_init runs once, before the first handle, as libcurl requires.
#include "engine/llm/http_transport.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cctype>
#include <ctime>
#include <memory>
#include <mutex>

namespace kblaster::engine::llm {
namespace {

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user) {
  std::string line(data, size * n);
  const auto colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    if (name == "retry-after") {
      std::string v = line.substr(colon + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      v.erase(v.find_last_not_of(" \t\r\n") + 1);
      *static_cast<std::string*>(user) = v;
    }
  }
  return size * n;
}

struct curl_deleter {
  void operator()(CURL* c) const noexcept { curl_easy_cleanup(c); }
};
struct slist_deleter {
  void operator()(curl_slist* l) const noexcept { curl_slist_free_all(l); }
};

}  // namespace

namespace {

// One request: `body_setup` sets the method and the body on the handle (nothing: a GET).
template <class Setup>
http_result perform(const std::string& url, const std::map<std::string, std::string>& headers, double timeout_s,
                    Setup&& body_setup) {
  global_init();
  http_result r;
  std::unique_ptr<CURL, curl_deleter> curl(curl_easy_init());
  if (!curl) {
    r.transport_error = "curl_easy_init failed";
    return r;
  }
  std::unique_ptr<curl_slist, slist_deleter> list;
  curl_slist* raw = nullptr;
  for (const auto& [k, v] : headers) {
    const std::string line = k + ": " + v;
    curl_slist* next = curl_slist_append(raw, line.c_str());
    if (!next) break;
    raw = next;
  }
  list.reset(raw);
  CURL* h = curl.get();
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  body_setup(h);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, list.get());
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &r.body);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &r.retry_after);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_s * 1000));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::min(timeout_s, 30.0) * 1000));
  // Worker threads must not receive SIGALRM from the resolver.
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
  const auto start = std::chrono::steady_clock::now();
  const CURLcode rc = curl_easy_perform(h);
  r.elapsed_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (rc != CURLE_OK) {
    r.timed_out = rc == CURLE_OPERATION_TIMEDOUT;
    r.transport_error = curl_easy_strerror(rc);
    return r;
  }
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  r.status = static_cast<int>(status);
  return r;
}

struct mime_deleter {
  void operator()(curl_mime* m) const noexcept { curl_mime_free(m); }
};

}  // namespace

http_result http_post(const std::string& url, const std::map<std::string, std::string>& headers,
                      const std::string& body, double timeout_s) {
  return perform(url, headers, timeout_s, [&](CURL* h) {
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  });
}

http_result http_get(const std::string& url, const std::map<std::string, std::string>& headers, double timeout_s) {
  return perform(url, headers, timeout_s, [](CURL* h) { curl_easy_setopt(h, CURLOPT_HTTPGET, 1L); });
}

http_result http_post_file(const std::string& url, const std::map<std::string, std::string>& headers,
                           const std::map<std::string, std::string>& fields, const std::string& file_field,
                           const std::string& file_name, const std::string& content, double timeout_s) {
  std::unique_ptr<curl_mime, mime_deleter> mime;
  return perform(url, headers, timeout_s, [&](CURL* h) {
    mime.reset(curl_mime_init(h));
    for (const auto& [name, value] : fields) {
      curl_mimepart* part = curl_mime_addpart(mime.get());
      curl_mime_name(part, name.c_str());
      curl_mime_data(part, value.c_str(), CURL_ZERO_TERMINATED);
    }
    curl_mimepart* file = curl_mime_addpart(mime.get());
    curl_mime_name(file, file_field.c_str());
    curl_mime_filename(file, file_name.c_str());
    curl_mime_type(file, "application/jsonl");
    curl_mime_data(file, content.data(), content.size());
    curl_easy_setopt(h, CURLOPT_MIMEPOST, mime.get());
  });
}

double parse_retry_after(const std::string& value) {
  if (value.empty()) return -1;
  if (std::all_of(value.begin(), value.end(), [](unsigned char c) { return std::isdigit(c) || c == '.'; })) {
    try {
      return std::stod(value);
    } catch (const std::exception&) {
      return -1;
    }
  }
  const time_t when = curl_getdate(value.c_str(), nullptr);
  if (when < 0) return -1;
  return std::max(0.0, std::difftime(when, std::time(nullptr)));
}

}  // namespace kblaster::engine::llm
