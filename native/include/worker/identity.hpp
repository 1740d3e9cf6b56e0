// The build identity: what this binary was built from, embedded at configure
// time (see build_identity.hpp.in) and printed by `worker --version` and
// `worker --capabilities`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "worker/json.hpp"

namespace worker {

// One [[patch]] table of stack/stack.lock.
struct LockedPatch {
  std::string file;
  int strip = 1;
  std::string digest;
};

// An accepted native/certifications/*.toml record.
struct Certification {
  std::string record;  // file name
  std::string backend;
  std::string model;
  std::string recipe;
  std::string evidence;
  std::string evidence_sha256;
  std::vector<std::string> capabilities;
};

// Set when the worker was linked against a `patchctl apply --into` tree.
struct UpstreamBuild {
  std::string dir;
  std::string target;
  std::string tree;  // the stamp's git tree id
};

// A third-party library the worker was built with (native/cmake/Libraries.cmake).
struct Library {
  std::string name;
  std::string version;  // as found at configure time
  std::string license;  // SPDX id
  std::string linkage;  // "header-only", "shared" or "static"
};

struct BuildIdentity {
  std::string engine_version;
  // The stack, as in `patchctl fingerprint --json`.
  std::string algorithm;
  std::string upstream_name;
  std::string upstream_pin;
  std::string fingerprint;
  std::vector<LockedPatch> patches;
  // The toolchain.
  std::string compiler_id;
  std::string compiler_version;
  std::string cmake_version;
  std::string build_type;
  // "uncertified", or the sha256 over the accepted records.
  std::string certification = "uncertified";
  std::vector<Certification> certifications;
  std::vector<std::string> certification_notes;  // why records were not accepted
  std::optional<UpstreamBuild> upstream_build;
  // The hardware lane (native/cmake/Lanes.cmake): "dev" for a build that is
  // not a release, else e.g. "cpu", with the CPU features it was built for.
  std::string lane = "dev";
  std::string lane_arch;
  std::vector<std::string> lane_features;
  bool release = false;  // built by `patchctl release build`: checks its package at start
  // The compute backend linked (native/cmake/Lanes.cmake): "cpu" or "vulkan"; for
  // vulkan, the loader and headers versions configure found (native/cmake/Vulkan.cmake).
  std::string backend = "cpu";
  std::string backend_loader;
  std::string backend_headers;
  std::vector<Library> libraries;
};

// First 16 hex characters, as patchctl prints it.
std::string short_fingerprint(const std::string& fingerprint);

json::Value identity_json(const BuildIdentity& id);
std::string identity_text(const BuildIdentity& id);

// Only capabilities backed by an accepted certification record.
json::Value capabilities_json(const BuildIdentity& id);
std::string capabilities_text(const BuildIdentity& id);

}  // namespace worker
