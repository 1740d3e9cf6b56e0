#include "worker/identity.hpp"

#include <cstdint>
#include <sstream>

#include "worker/frame.hpp"

namespace worker {

std::string short_fingerprint(const std::string& fingerprint) {
  return fingerprint.substr(0, 16);
}

json::Value identity_json(const BuildIdentity& id) {
  json::Array patches;
  for (const LockedPatch& p : id.patches) {
    patches.emplace_back(json::Object{
        {"file", p.file}, {"strip", p.strip}, {"digest", p.digest}});
  }
  json::Array features;
  for (const std::string& f : id.lane_features) features.emplace_back(f);
  json::Value upstream_build;  // null: the standalone CPU lane
  if (id.upstream_build) {
    upstream_build = json::Object{{"dir", id.upstream_build->dir},
                                  {"target", id.upstream_build->target},
                                  {"tree", id.upstream_build->tree}};
  }
  json::Array libraries;
  for (const Library& l : id.libraries) {
    libraries.emplace_back(json::Object{{"name", l.name},
                                        {"version", l.version},
                                        {"license", l.license},
                                        {"linkage", l.linkage}});
  }
  json::Object backend{{"name", id.backend}};
  if (!id.backend_loader.empty()) backend.emplace("loader", id.backend_loader);
  if (!id.backend_headers.empty()) backend.emplace("headers", id.backend_headers);
  return json::Object{
      {"protocol_version", static_cast<int>(kProtocolVersion)},
      {"engine_version", id.engine_version},
      // Same keys as `patchctl fingerprint --json`, so the two compare 1:1.
      {"stack", json::Object{{"algorithm", id.algorithm},
                             {"name", id.upstream_name},
                             {"pin", id.upstream_pin},
                             {"fingerprint", id.fingerprint},
                             {"short", short_fingerprint(id.fingerprint)},
                             {"patches", std::move(patches)}}},
      {"compiler", json::Object{{"id", id.compiler_id},
                                {"version", id.compiler_version}}},
      {"cmake_version", id.cmake_version},
      {"build_type", id.build_type},
      {"certification", id.certification},
      {"upstream_build", std::move(upstream_build)},
      {"lane", json::Object{{"name", id.lane},
                            {"arch", id.lane_arch},
                            {"cpu_features", std::move(features)},
                            {"release", id.release}}},
      {"backend", std::move(backend)},
      {"libraries", std::move(libraries)},
  };
}

std::string identity_text(const BuildIdentity& id) {
  std::ostringstream out;
  out << "worker " << id.engine_version << " (protocol " << kProtocolVersion << ")\n"
      << "upstream: " << id.upstream_name << " " << id.upstream_pin << "\n"
      << "stack: " << short_fingerprint(id.fingerprint) << " (" << id.algorithm
      << " " << id.fingerprint << "), " << id.patches.size()
      << (id.patches.size() == 1 ? " patch\n" : " patches\n");
  for (const LockedPatch& p : id.patches) out << "  " << p.file << "\n";
  out << "built with: " << id.compiler_id << " " << id.compiler_version
      << ", CMake " << id.cmake_version << ", " << id.build_type << "\n"
      << "certification: " << id.certification << "\n";
  if (id.upstream_build) {
    out << "upstream build: target " << id.upstream_build->target << " from "
        << id.upstream_build->dir << " (tree " << id.upstream_build->tree << ")\n";
  } else {
    out << "upstream build: none (standalone CPU lane)\n";
  }
  out << "lane: " << id.lane << (id.release ? " (release)" : "");
  if (!id.lane_features.empty()) {
    out << ", needs";
    for (const std::string& f : id.lane_features) out << " " << f;
  }
  out << "\nbackend: " << id.backend;
  if (!id.backend_loader.empty()) {
    out << " (Vulkan loader " << id.backend_loader << ", headers " << id.backend_headers << ")";
  }
  out << "\nlibraries:";
  for (std::size_t i = 0; i < id.libraries.size(); ++i) {
    const Library& l = id.libraries[i];
    out << (i == 0 ? " " : ", ") << l.name << " " << l.version << " (" << l.license << ", "
        << l.linkage << ")";
  }
  out << "\n";
  return out.str();
}

json::Value capabilities_json(const BuildIdentity& id) {
  json::Array capabilities;
  for (const Certification& c : id.certifications) {
    for (const std::string& name : c.capabilities) {
      capabilities.emplace_back(json::Object{
          {"name", name},
          {"backend", c.backend},
          {"model", c.model},
          {"recipe", c.recipe},
          {"record", c.record},
          {"evidence", c.evidence},
          {"evidence_sha256", c.evidence_sha256},
      });
    }
  }
  json::Array notes;
  for (const std::string& note : id.certification_notes) notes.emplace_back(note);
  return json::Object{
      {"fingerprint", id.fingerprint},
      {"certification", id.certification},
      {"capabilities", std::move(capabilities)},
      {"notes", std::move(notes)},
  };
}

std::string capabilities_text(const BuildIdentity& id) {
  std::ostringstream out;
  if (id.certifications.empty()) {
    out << "capabilities: none\n";
  } else {
    out << "capabilities (certification " << short_fingerprint(id.certification)
        << "):\n";
    for (const Certification& c : id.certifications) {
      for (const std::string& name : c.capabilities) {
        out << "  " << name << "  backend=" << c.backend << " model=" << c.model
            << " recipe=" << c.recipe << "  [" << c.record << "]\n";
      }
    }
  }
  for (const std::string& note : id.certification_notes) out << "  " << note << "\n";
  return out.str();
}

}  // namespace worker
