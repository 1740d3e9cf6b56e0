#!/usr/bin/env bash
# Does this machine's vulkan.hpp declare what the pinned ggml-vulkan.cpp uses
# from VK_EXT_layer_settings (vk::LayerSettingEXT, Vulkan-Headers 1.3.272+)?
# Exit 0 yes, 1 no (with the compiler's error). Debian 12's libvulkan-dev
# 1.3.239 says no: evidence/vulkan-lane-bookworm-headers.log.
#   bash native/ci/vulkan-headers-check.sh [INCLUDE_DIR]     (default /usr/include)
set -euo pipefail
inc=${1:-/usr/include}
echo "VK_HEADER_VERSION $(sed -n 's/^#define VK_HEADER_VERSION \([0-9]*\).*/\1/p' "$inc/vulkan/vulkan_core.h") in $inc"
dpkg-query -W -f '${Package} ${Version}\n' libvulkan-dev 2>/dev/null || true
flags=()
[ "$inc" != /usr/include ] && flags=(-I "$inc")
src='#define VULKAN_HPP_DISPATCH_LOADER_DYNAMIC 1
#include <vulkan/vulkan.hpp>
vk::LayerSettingEXT setting{"VK_LAYER_KHRONOS_validation", "validate_best_practices",
                            vk::LayerSettingTypeEXT::eBool32, 1, nullptr};
vk::LayerSettingsCreateInfoEXT info(setting);'
if out=$(printf '%s\n' "$src" | "${CXX:-c++}" -std=c++17 -fsyntax-only "${flags[@]}" -x c++ - 2>&1); then
  echo "vk::LayerSettingEXT and vk::LayerSettingsCreateInfoEXT: declared"
  exit 0
fi
echo "$out" | grep -E 'error' | sed 's/^<stdin>/check.cpp/'
echo "missing: VK_EXT_layer_settings in vulkan.hpp (Vulkan-Headers 1.3.272 or later)"
exit 1
