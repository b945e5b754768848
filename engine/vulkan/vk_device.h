#pragma once
// Vulkan instance and devices: what each physical device offers (DeviceCaps, listed by
// env-probe and `kakeya-engine devices`), and one opened device with its compute queue
// (VulkanDevice) for the backend (vk_backend.h).
//
// The loader is libvulkan (Khronos); it honours VK_ICD_FILENAMES / VK_DRIVER_FILES, so a
// container or CI machine selects Mesa's lavapipe (a CPU implementation) with
// VK_ICD_FILENAMES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json.
//
// What the backend REQUIRES of a device (check_device_requirements): Vulkan 1.2, a compute
// queue, the bufferDeviceAddress feature (every shader reads its tensors through buffer device
// addresses passed in push constants, so no descriptor sets and no storage-buffer range limit),
// 256 invocations per workgroup and 16 KiB of shared memory per workgroup. Everything else is
// optional and reported: subgroup arithmetic (reductions use it when present, shared memory
// otherwise), fp16/int8 arithmetic, 16/8-bit storage, VK_KHR_cooperative_matrix and
// VK_NV_cooperative_matrix (vk_matmul_path.h).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <vulkan/vulkan.h>

#include "bridge/result.h"

namespace kakeya::engine {

struct DeviceHeap {
  uint64_t size_bytes = 0;
  bool device_local = false;
};

// What one physical device offers, read from the driver.
struct DeviceCaps {
  uint32_t index = 0;     // position in the loader's enumeration: "vulkan:N"
  std::string name;       // VkPhysicalDeviceProperties::deviceName
  std::string type;       // discrete_gpu, integrated_gpu, virtual_gpu, cpu, other
  std::string driver;     // driverName + " " + driverInfo (VK_KHR_driver_properties, core 1.2)
  std::string api_version;  // "1.3.230"
  uint32_t api_version_raw = 0;
  uint32_t vendor_id = 0, device_id = 0;
  std::vector<DeviceHeap> heaps;
  uint64_t device_local_bytes = 0;  // the largest device-local heap
  uint32_t subgroup_size = 0;
  bool subgroup_arithmetic = false;  // VK_SUBGROUP_FEATURE_ARITHMETIC_BIT in compute shaders
  bool shader_float16 = false, shader_int8 = false, shader_int64 = false;
  bool storage_16bit = false, storage_8bit = false;
  bool buffer_device_address = false;
  bool cooperative_matrix_khr = false;  // the extension is exposed
  bool cooperative_matrix_nv = false;
  bool compute_queue = false;
  uint32_t max_workgroup_invocations = 0;
  uint32_t max_shared_memory_bytes = 0;
  uint64_t max_memory_allocation_bytes = 0;
};
nlohmann::json to_json(const DeviceCaps& caps);

// "" when the backend can run on `caps`, else what is missing, e.g. "no bufferDeviceAddress".
std::string check_device_requirements(const DeviceCaps& caps);

// Every physical device the loader finds. Errors: "backend_unavailable" (no instance: no loader
// or no ICD, with the VkResult; or zero devices).
Result<std::vector<DeviceCaps>> list_vulkan_devices();

// The device "vulkan" picks: the first discrete GPU, else device 0. REQUIRES: !devices.empty().
uint32_t default_device_index(const std::vector<DeviceCaps>& devices);

// An opened device: instance, logical device, one compute queue, a command pool.
// REQUIRES: external synchronization (one thread at a time).
class VulkanDevice {
 public:
  // Opens device `index` (-1: default_device_index). Errors: "backend_unavailable" naming the
  // device and what it lacks; "bad_param" for an index outside the device list (naming the count).
  static Result<std::unique_ptr<VulkanDevice>> open(int index);
  ~VulkanDevice();
  VulkanDevice(const VulkanDevice&) = delete;
  VulkanDevice& operator=(const VulkanDevice&) = delete;

  const DeviceCaps& caps() const { return caps_; }
  VkInstance instance() const { return instance_; }
  VkPhysicalDevice physical() const { return physical_; }
  VkDevice device() const { return device_; }
  VkQueue queue() const { return queue_; }
  VkCommandPool command_pool() const { return pool_; }
  uint32_t queue_family() const { return queue_family_; }
  const VkPhysicalDeviceMemoryProperties& memory_properties() const { return memory_; }

 private:
  VulkanDevice() = default;
  DeviceCaps caps_;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  VkPhysicalDeviceMemoryProperties memory_{};
};

// "VkResult N (VK_ERROR_...)" for messages.
std::string vk_result_name(VkResult r);

}  // namespace kakeya::engine
