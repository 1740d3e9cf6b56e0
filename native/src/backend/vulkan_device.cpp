#include "vulkan_device.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <utility>

#include <vulkan/vulkan.h>

#include "ggml-backend.h"
#include "ggml.h"

namespace worker::vulkan {

namespace {

std::string version_text(std::uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) +
         "." + std::to_string(VK_API_VERSION_PATCH(v));
}

std::string type_name(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "gpu";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated-gpu";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual-gpu";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

std::string result_name(VkResult r) {
  switch (r) {
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    default: return "VkResult " + std::to_string(static_cast<int>(r));
  }
}

bool llama_log_wanted() {
  const char* v = std::getenv("WORKER_LLAMA_LOG");
  return v != nullptr && std::string(v) == "1";
}

// fd 2 into a temp file for a scope: what the loader and ggml print while
// they initialise is read back instead of reaching the terminal.
class CapturedStderr {
 public:
  CapturedStderr() {
    std::fflush(stderr);
    file_ = std::tmpfile();
    saved_ = file_ != nullptr ? ::dup(2) : -1;
    if (saved_ >= 0 && ::dup2(::fileno(file_), 2) < 0) {
      ::close(saved_);
      saved_ = -1;
    }
  }
  CapturedStderr(const CapturedStderr&) = delete;
  CapturedStderr& operator=(const CapturedStderr&) = delete;
  ~CapturedStderr() { (void)finish(); }

  // Restores stderr; returns what was written to it meanwhile.
  std::string finish() {
    std::string text;
    if (saved_ >= 0) {
      std::fflush(stderr);
      ::dup2(saved_, 2);
      ::close(saved_);
      saved_ = -1;
      std::rewind(file_);
      char buf[4096];
      std::size_t n = 0;
      while ((n = std::fread(buf, 1, sizeof buf, file_)) > 0 && text.size() < (1u << 20)) {
        text.append(buf, n);
      }
    }
    if (file_ != nullptr) {
      std::fclose(file_);
      file_ = nullptr;
    }
    return text;
  }

 private:
  std::FILE* file_ = nullptr;
  int saved_ = -1;
};

// The loader's last message, without its "ERROR: [Loader Message] Code 0 : " prefix.
std::string last_loader_message(const std::string& text) {
  std::istringstream lines(text);
  std::string line, last;
  while (std::getline(lines, line)) {
    if (line.find("Loader Message") != std::string::npos) last = line;
  }
  const auto colon = last.find(" : ");
  if (colon != std::string::npos) last = last.substr(colon + 3);
  return last.size() > 200 ? last.substr(0, 200) + "..." : last;
}

void ask_loader(Probe& p) {
  std::uint32_t api = 0;
  if (vkEnumerateInstanceVersion(&api) == VK_SUCCESS) p.loader = version_text(api);
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "worker";
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  info.pApplicationInfo = &app;
  VkInstance instance = VK_NULL_HANDLE;
  CapturedStderr quiet;
  const VkResult created = vkCreateInstance(&info, nullptr, &instance);
  if (created != VK_SUCCESS) {
    const std::string said = last_loader_message(quiet.finish());
    p.error = "vkCreateInstance: " + result_name(created) + (said.empty() ? "" : "; " + said);
    return;
  }
  std::uint32_t count = 0;
  vkEnumeratePhysicalDevices(instance, &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  if (count > 0) vkEnumeratePhysicalDevices(instance, &count, devices.data());
  devices.resize(count);
  for (VkPhysicalDevice d : devices) {
    VkPhysicalDeviceProperties props{};
    vkGetPhysicalDeviceProperties(d, &props);
    PhysicalDevice out{props.deviceName, type_name(props.deviceType),
                       version_text(props.apiVersion), "", ""};
    if (props.apiVersion >= VK_API_VERSION_1_2) {
      VkPhysicalDeviceDriverProperties driver{};
      driver.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
      VkPhysicalDeviceProperties2 props2{};
      props2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
      props2.pNext = &driver;
      vkGetPhysicalDeviceProperties2(d, &props2);
      out.driver = driver.driverName;
      out.driver_info = driver.driverInfo;
    }
    p.physical.push_back(std::move(out));
  }
  vkDestroyInstance(instance, nullptr);
  const std::string said = last_loader_message(quiet.finish());
  if (p.physical.empty()) {
    p.error = "no physical device" + (said.empty() ? std::string() : "; " + said);
  }
}

// GGML_VK_VISIBLE_DEVICES as ggml-vulkan reads it; the first index past the
// devices the loader sees, or -1 (ggml-vulkan would print and fail on it).
long bad_visible_index(const std::string& visible, std::size_t devices) {
  std::string list = visible;
  for (char& c : list) c = c == ',' ? ' ' : c;
  std::istringstream in(list);
  std::size_t index = 0;
  while (in >> index) {
    if (index >= devices) return static_cast<long>(index);
  }
  return -1;
}

void ggml_log(ggml_log_level /*level*/, const char* text, void* /*user*/) {
  if (llama_log_wanted()) std::fputs(text, stderr);
}

void ask_ggml(Probe& p) {
  ggml_log_set(ggml_log, nullptr);
  CapturedStderr quiet;  // ggml-vulkan also writes to std::cerr
  ggml_backend_reg_t reg = ggml_backend_reg_by_name("Vulkan");
  const std::size_t count = reg != nullptr ? ggml_backend_reg_dev_count(reg) : 0;
  for (std::size_t i = 0; i < count; ++i) {
    ggml_backend_dev_t dev = ggml_backend_reg_dev_get(reg, i);
    GgmlDevice g{ggml_backend_dev_name(dev), ggml_backend_dev_description(dev), std::nullopt};
    for (const PhysicalDevice& d : p.physical) {
      if (d.name == g.description) g.physical = d;
    }
    p.ggml.push_back(std::move(g));
  }
  const std::string said = quiet.finish();
  if (llama_log_wanted()) std::fputs(said.c_str(), stderr);
  ggml_log_set(nullptr, nullptr);
}

json::Value physical_json(const PhysicalDevice& d) {
  return json::Object{{"name", d.name},     {"type", d.type},
                      {"api_version", d.api_version}, {"driver", d.driver},
                      {"driver_info", d.driver_info}};
}

std::string physical_text(const PhysicalDevice& d) {
  std::string out = d.name + " (" + d.type + ", Vulkan " + d.api_version;
  if (!d.driver.empty()) out += ", driver " + d.driver + " " + d.driver_info;
  return out + ")";
}

std::string physical_list(const Probe& p) {
  std::string out;
  for (std::size_t i = 0; i < p.physical.size(); ++i) {
    out += (i ? "; " : "") + std::to_string(i) + ": " + physical_text(p.physical[i]);
  }
  return out;
}

}  // namespace

Probe probe() {
  Probe p;
  if (const char* v = std::getenv("GGML_VK_VISIBLE_DEVICES")) p.visible = v;
  ask_loader(p);
  if (p.physical.empty()) return p;
  if (bad_visible_index(p.visible, p.physical.size()) >= 0) return p;
  ask_ggml(p);
  return p;
}

json::Value probe_json(const Probe& p) {
  json::Array physical;
  for (const PhysicalDevice& d : p.physical) physical.push_back(physical_json(d));
  json::Array ggml;
  for (const GgmlDevice& g : p.ggml) {
    ggml.push_back(json::Object{{"name", g.name},
                                {"description", g.description},
                                {"physical", g.physical ? physical_json(*g.physical)
                                                        : json::Value(nullptr)}});
  }
  return json::Object{{"backend", "vulkan"},
                      {"loader", p.loader},
                      {"error", p.error.empty() ? json::Value(nullptr) : json::Value(p.error)},
                      {"visible_devices", p.visible.empty() ? json::Value(nullptr)
                                                            : json::Value(p.visible)},
                      {"physical_devices", std::move(physical)},
                      {"devices", std::move(ggml)}};
}

std::string probe_text(const Probe& p) {
  std::ostringstream out;
  out << "Vulkan loader " << (p.loader.empty() ? "unknown" : p.loader) << "\n";
  if (!p.error.empty()) out << "  " << p.error << "\n";
  for (std::size_t i = 0; i < p.physical.size(); ++i) {
    out << "  physical " << i << ": " << physical_text(p.physical[i]) << "\n";
  }
  for (const GgmlDevice& g : p.ggml) out << "  " << g.name << ": " << g.description << "\n";
  if (p.ggml.empty() && !p.physical.empty()) out << "  ggml-vulkan uses none of them\n";
  return out.str();
}

std::optional<Refusal> check_device(const BuildIdentity& id, GateStep& step) {
  step = {"device", "skipped", "backend " + id.backend + " (not the vulkan lane)"};
  if (id.lane != "vulkan") return std::nullopt;
  const Probe p = probe();
  const std::string loader = "the Vulkan loader " + (p.loader.empty() ? "" : p.loader + " ");
  if (p.physical.empty()) {
    return Refusal{kExitDevice,
                   "lane vulkan needs a Vulkan device; " + loader + "found none (" + p.error +
                       "): install the device's Vulkan driver (Mesa's CPU device, lavapipe: "
                       "mesa-vulkan-drivers), or use the package of a CPU lane"};
  }
  const long bad = bad_visible_index(p.visible, p.physical.size());
  if (bad >= 0) {
    return Refusal{kExitDevice, "lane vulkan: GGML_VK_VISIBLE_DEVICES=" + p.visible +
                                    " names device " + std::to_string(bad) + ", " + loader +
                                    "sees " + std::to_string(p.physical.size()) + " (" +
                                    physical_list(p) + "): name one of those"};
  }
  if (p.ggml.empty()) {
    return Refusal{kExitDevice,
                   "lane vulkan needs a Vulkan device ggml-vulkan runs on; " + loader + "sees " +
                       std::to_string(p.physical.size()) + " (" + physical_list(p) +
                       "), which ggml-vulkan skips unless named (CPU-type devices are): set "
                       "GGML_VK_VISIBLE_DEVICES to its index (e.g. 0) to run on it"};
  }
  std::string detail;
  for (const GgmlDevice& g : p.ggml) {
    detail += (detail.empty() ? "" : "; ") + g.name + ": " +
              (g.physical ? physical_text(*g.physical) : g.description);
  }
  step = {"device", "ok", detail + "; Vulkan loader " + p.loader};
  return std::nullopt;
}

}  // namespace worker::vulkan
