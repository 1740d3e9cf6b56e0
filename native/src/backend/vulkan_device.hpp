// The vulkan lane's device: what the Vulkan loader and ggml-vulkan see on
// this host (`worker --devices`), and the start-up gate's device step (a
// worker of the vulkan lane refuses to start where ggml-vulkan has no device
// to run on, exit kExitDevice). Only in a worker built with GGML_VULKAN.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "worker/identity.hpp"
#include "worker/json.hpp"
#include "worker/startup.hpp"

namespace worker::vulkan {

// A physical device as the loader enumerates it.
struct PhysicalDevice {
  std::string name;         // VkPhysicalDeviceProperties::deviceName
  std::string type;         // gpu | integrated-gpu | virtual-gpu | cpu | other
  std::string api_version;  // the driver's Vulkan version, "1.3.230"
  std::string driver;       // VkPhysicalDeviceDriverProperties::driverName ("" before 1.2)
  std::string driver_info;  // ::driverInfo, e.g. "Mesa 22.3.6 (LLVM 15.0.6)"
};

// A device ggml-vulkan will run on ("Vulkan0"), and its physical device.
struct GgmlDevice {
  std::string name;
  std::string description;
  std::optional<PhysicalDevice> physical;
};

struct Probe {
  std::string loader;  // vkEnumerateInstanceVersion, "1.3.239"
  std::string error;   // why the loader gave no instance or devices ("" when it did)
  std::vector<PhysicalDevice> physical;
  std::vector<GgmlDevice> ggml;  // filled only when the loader sees a device
  std::string visible;           // GGML_VK_VISIBLE_DEVICES as set ("" when unset)
};

// Asks the loader, then (only when the loader sees a usable device and
// GGML_VK_VISIBLE_DEVICES names only devices that exist) ggml-vulkan. The
// loader's and ggml's own messages are kept off stderr (the refusal is one
// line); ggml's log shows with WORKER_LLAMA_LOG=1, as in the stage mode.
Probe probe();

json::Value probe_json(const Probe& p);
std::string probe_text(const Probe& p);

// The gate's device step: for a worker of the vulkan lane, probe() and refuse
// (kExitDevice, one line) when ggml-vulkan would have no device; skipped otherwise.
std::optional<Refusal> check_device(const BuildIdentity& id, GateStep& step);

}  // namespace worker::vulkan
