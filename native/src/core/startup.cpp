#include "worker/startup.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <system_error>

#include "worker/frame.hpp"
#include "worker/json.hpp"
#include "worker/sha256.hpp"

#if defined(__APPLE__)
#include <mach-o/dyld.h>
#endif

namespace fs = std::filesystem;

namespace worker {

namespace {

constexpr const char* kManifestSchema = "patchctl.release/1";
constexpr const char* kRecipeSchema = "worker.recipe/1";

bool is_hex64(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return text.str();
}

std::string short16(const std::string& s) { return s.substr(0, 16); }

// "a.b.c" into a JSON document; nullptr when any step is missing.
const json::Value* at(const json::Value& doc, std::initializer_list<const char*> path) {
  const json::Value* v = &doc;
  for (const char* key : path) {
    v = json::get(*v, key);
    if (v == nullptr) return nullptr;
  }
  return v;
}

std::string string_at(const json::Value& doc, std::initializer_list<const char*> path) {
  const json::Value* v = at(doc, path);
  const std::string* s = v ? json::as_string(*v) : nullptr;
  return s ? *s : std::string();
}

Refusal package_refusal(const std::string& what) {
  return {kExitPackage, "package check failed: " + what +
                            "; the package was changed after it was built: reinstall it from "
                            "its release archive (`patchctl release verify` names every problem)"};
}

}  // namespace

std::optional<Refusal> check_package(const std::string& root_text, const BuildIdentity& id,
                                     GateStep& step) {
  step = {"package", "skipped", "not a release build"};
  if (!id.release) return std::nullopt;
  const fs::path root(root_text);
  std::optional<std::string> sums = read_file(root / "SHA256SUMS");
  if (!sums) return package_refusal(root_text + "/SHA256SUMS is missing or unreadable");

  // Listed files: "<64 hex>  <relative path>" per line, as sha256sum writes.
  std::map<std::string, std::string> listed;
  std::istringstream lines(*sums);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    if (line.size() <= 66) {
      return package_refusal("SHA256SUMS line " + std::to_string(number) + " is malformed");
    }
    const std::string digest = line.substr(0, 64);
    const std::string rel = line.substr(66);
    const bool unsafe = rel.front() == '/' || rel.find("..") != std::string::npos;
    if (!is_hex64(digest) || line.compare(64, 2, "  ") != 0 || unsafe ||
        !listed.emplace(rel, digest).second) {
      return package_refusal("SHA256SUMS line " + std::to_string(number) + " is malformed");
    }
  }

  std::error_code ec;
  std::set<std::string> present;
  for (auto it = fs::recursive_directory_iterator(root, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path rel = it->path().lexically_relative(root);
    if (it->is_symlink()) return package_refusal(rel.generic_string() + " is a symbolic link");
    if (it->is_directory()) continue;
    if (!it->is_regular_file()) return package_refusal(rel.generic_string() + " is not a file");
    if (rel.generic_string() != "SHA256SUMS") present.insert(rel.generic_string());
  }
  if (ec) return package_refusal("cannot list " + root_text + ": " + ec.message());
  for (const std::string& rel : present) {
    if (listed.count(rel) == 0) return package_refusal(rel + " is not listed in SHA256SUMS");
  }
  for (const auto& [rel, digest] : listed) {
    if (present.count(rel) == 0) return package_refusal(rel + " is missing");
    std::optional<std::string> actual = sha256_file_hex((root / rel).string());
    if (!actual) return package_refusal(rel + " cannot be read");
    if (*actual != digest) {
      return package_refusal(rel + " has sha256 " + short16(*actual) + "..., SHA256SUMS says " +
                             short16(digest) + "...");
    }
  }

  std::optional<std::string> text = read_file(root / "manifest.json");
  if (!text) return package_refusal("manifest.json is missing");
  const json::ParseResult parsed = json::parse(*text);
  if (!parsed.value) return package_refusal("manifest.json is not JSON (" + parsed.error + ")");
  const json::Value& m = *parsed.value;
  if (string_at(m, {"schema"}) != kManifestSchema) {
    return package_refusal("manifest.json is not a " + std::string(kManifestSchema) +
                           " manifest");
  }
  const auto differs = [&](const std::string& what, const std::string& manifest,
                           const std::string& mine) -> std::optional<Refusal> {
    if (manifest == mine) return std::nullopt;
    return package_refusal("manifest.json names " + what + " `" + manifest +
                           "`, this binary is `" + mine + "`");
  };
  const json::Value* protocol = at(m, {"worker", "protocol_version"});
  const std::optional<std::int64_t> protocol_int =
      protocol ? json::as_int(*protocol) : std::nullopt;
  if (auto r = differs("protocol", protocol_int ? std::to_string(*protocol_int) : "",
                       std::to_string(kProtocolVersion))) {
    return r;
  }
  if (auto r = differs("engine version", string_at(m, {"worker", "engine_version"}),
                       id.engine_version)) {
    return r;
  }
  if (auto r = differs("pin", string_at(m, {"stack", "pin"}), id.upstream_pin)) return r;
  if (auto r = differs("stack fingerprint", string_at(m, {"stack", "fingerprint"}),
                       id.fingerprint)) {
    return r;
  }
  if (auto r = differs("lane", string_at(m, {"lane", "name"}), id.lane)) return r;
  if (auto r = differs("backend", string_at(m, {"backend", "name"}), id.backend)) return r;
  step = {"package", "ok", std::to_string(listed.size()) + " files match SHA256SUMS; "
                               "manifest.json describes this binary"};
  return std::nullopt;
}

std::vector<std::string> detect_cpu_features() {
  std::vector<std::string> found;
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
  __builtin_cpu_init();
#define WORKER_FEATURE(name) \
  if (__builtin_cpu_supports(name)) found.emplace_back(name);
  WORKER_FEATURE("sse2")
  WORKER_FEATURE("sse4.2")
  WORKER_FEATURE("avx")
  WORKER_FEATURE("avx2")
  WORKER_FEATURE("fma")
  WORKER_FEATURE("f16c")
  WORKER_FEATURE("bmi2")
  WORKER_FEATURE("avx512f")
#undef WORKER_FEATURE
#endif
  if (const char* hide = std::getenv("WORKER_HIDE_CPU_FEATURES")) {
    std::istringstream names(hide);
    std::string name;
    while (std::getline(names, name, ',')) {
      found.erase(std::remove(found.begin(), found.end(), name), found.end());
    }
  }
  return found;
}

std::optional<Refusal> check_lane(const BuildIdentity& id, const std::vector<std::string>& cpu,
                                  GateStep& step) {
  std::vector<std::string> missing;
  for (const std::string& need : id.lane_features) {
    if (std::find(cpu.begin(), cpu.end(), need) == cpu.end()) missing.push_back(need);
  }
  std::string needs;
  for (const std::string& f : id.lane_features) needs += (needs.empty() ? "" : ",") + f;
  if (!missing.empty()) {
    std::string lacks;
    for (const std::string& f : missing) lacks += (lacks.empty() ? "" : ",") + f;
    return Refusal{kExitLane, "lane " + id.lane + " needs CPU features " + needs +
                                  "; this CPU lacks " + lacks +
                                  ": install the package of a lane this CPU can run "
                                  "(e.g. cpu)"};
  }
  step = {"lane", "ok", id.lane + (needs.empty() ? " (no CPU feature needed)"
                                                  : " (CPU has " + needs + ")")};
  return std::nullopt;
}

std::optional<Refusal> check_recipe(const std::string& path, const BuildIdentity& id,
                                    GateStep& step) {
  const auto refuse = [&](const std::string& why) {
    return Refusal{kExitRecipe, "recipe " + path + ": " + why};
  };
  std::optional<std::string> text = read_file(path);
  if (!text) return refuse("cannot be read");
  const json::ParseResult parsed = json::parse(*text);
  if (!parsed.value) return refuse("not JSON (" + parsed.error + ")");
  const json::Value& r = *parsed.value;
  if (!r.is_object()) return refuse("not a JSON object");
  const json::Object& members = r.get_ref<const json::Object&>();
  static const std::set<std::string> kKnown = {"schema", "protocol_version", "pin",
                                               "stack_fingerprint", "lane", "artifacts"};
  for (const auto& member : members) {
    if (kKnown.count(member.first) == 0) return refuse("unknown key \"" + member.first + "\"");
  }
  if (string_at(r, {"schema"}) != kRecipeSchema) {
    return refuse(std::string("schema must be \"") + kRecipeSchema + "\"");
  }
  const json::Value* protocol_value = json::get(r, "protocol_version");
  const std::optional<std::int64_t> protocol =
      protocol_value ? json::as_int(*protocol_value) : std::nullopt;
  if (!protocol) return refuse("protocol_version must be an integer");
  if (*protocol != kProtocolVersion) {
    return refuse("requires protocol " + std::to_string(*protocol) +
                  ", this worker speaks " + std::to_string(kProtocolVersion));
  }
  const auto require = [&](const char* key, const std::string& mine,
                           const char* what) -> std::optional<Refusal> {
    const json::Value* v = json::get(r, key);
    const std::string* given = v ? json::as_string(*v) : nullptr;
    if (given == nullptr) return refuse(std::string(key) + " must be a string");
    if (*given != mine) {
      return refuse(std::string("requires ") + what + " " + *given +
                    ", this worker is " + mine);
    }
    return std::nullopt;
  };
  if (auto x = require("pin", id.upstream_pin, "pin")) return x;
  if (auto x = require("stack_fingerprint", id.fingerprint, "stack fingerprint")) return x;
  if (auto x = require("lane", id.lane, "lane")) return x;

  std::size_t artifacts = 0;
  if (const json::Value* list = json::get(r, "artifacts")) {
    if (!list->is_array()) return refuse("artifacts must be an array");
    const fs::path base = fs::path(path).parent_path();
    for (const json::Value& a : *list) {
      const std::string rel = string_at(a, {"path"});
      const std::string want = string_at(a, {"sha256"});
      bool extra = false;
      for (const auto& member : a.is_object() ? a.get_ref<const json::Object&>() : json::Object{}) {
        extra |= member.first != "path" && member.first != "sha256" && member.first != "role";
      }
      if (!a.is_object() || rel.empty() || !is_hex64(want) || extra) {
        return refuse("each artifact must be {\"path\", \"sha256\" (64 hex)[, \"role\"]}");
      }
      const fs::path file = fs::path(rel).is_absolute() ? fs::path(rel) : base / rel;
      std::optional<std::string> actual = sha256_file_hex(file.string());
      if (!actual) return refuse("artifact " + rel + " cannot be read");
      if (*actual != want) {
        return refuse("artifact " + rel + " has sha256 " + short16(*actual) +
                      "..., the recipe requires " + short16(want) + "...");
      }
      ++artifacts;
    }
  }
  step = {"recipe", "ok", path + " matches (protocol, pin, stack, lane, " +
                              std::to_string(artifacts) + " artifact hash(es))"};
  return std::nullopt;
}

std::string executable_path(const char* argv0) {
  std::error_code ec;
#if defined(__linux__)
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) return self.string();
#elif defined(__APPLE__)
  char buf[4096];
  std::uint32_t size = sizeof buf;
  if (_NSGetExecutablePath(buf, &size) == 0) {
    fs::path self = fs::canonical(buf, ec);
    if (!ec) return self.string();
  }
#endif
  if (argv0 != nullptr) {
    fs::path from_argv = fs::canonical(argv0, ec);
    if (!ec) return from_argv.string();
  }
  return {};
}

}  // namespace worker
