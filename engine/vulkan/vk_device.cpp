#include "engine/vulkan/vk_device.h"

#include <cstring>

namespace kakeya::engine {
namespace {

std::string version_string(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}

const char* device_type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete_gpu";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated_gpu";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual_gpu";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

// An instance for enumeration and for the backend (Vulkan 1.2 requested; the loader clamps).
Result<VkInstance> create_instance() {
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "kakeya-engine";
  app.pEngineName = "kakeya";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  ci.pApplicationInfo = &app;
  VkInstance inst = VK_NULL_HANDLE;
  const VkResult rc = vkCreateInstance(&ci, nullptr, &inst);
  if (rc != VK_SUCCESS) {
    return make_error("backend_unavailable", "vulkan: vkCreateInstance failed with " + vk_result_name(rc) +
                                                 " (no Vulkan driver found; VK_ICD_FILENAMES / VK_DRIVER_FILES "
                                                 "select one)");
  }
  return inst;
}

std::vector<VkPhysicalDevice> physical_devices(VkInstance inst) {
  uint32_t n = 0;
  vkEnumeratePhysicalDevices(inst, &n, nullptr);
  std::vector<VkPhysicalDevice> devs(n);
  if (n > 0) vkEnumeratePhysicalDevices(inst, &n, devs.data());
  devs.resize(n);
  return devs;
}

DeviceCaps read_caps(VkPhysicalDevice d, uint32_t index) {
  DeviceCaps c;
  c.index = index;
  VkPhysicalDeviceProperties p{};
  vkGetPhysicalDeviceProperties(d, &p);
  c.name = p.deviceName;
  c.type = device_type_name(p.deviceType);
  c.api_version_raw = p.apiVersion;
  c.api_version = version_string(p.apiVersion);
  c.vendor_id = p.vendorID;
  c.device_id = p.deviceID;
  c.max_workgroup_invocations = p.limits.maxComputeWorkGroupInvocations;
  c.max_shared_memory_bytes = p.limits.maxComputeSharedMemorySize;
  const bool v12 = p.apiVersion >= VK_API_VERSION_1_2;

  VkPhysicalDeviceSubgroupProperties sub{};
  sub.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
  VkPhysicalDeviceDriverProperties drv{};
  drv.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
  VkPhysicalDeviceMaintenance3Properties m3{};
  m3.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES;
  VkPhysicalDeviceProperties2 p2{};
  p2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  p2.pNext = &sub;
  sub.pNext = &m3;
  if (v12) m3.pNext = &drv;
  vkGetPhysicalDeviceProperties2(d, &p2);
  c.subgroup_size = sub.subgroupSize;
  c.subgroup_arithmetic = (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0 &&
                          (sub.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) != 0;
  c.max_memory_allocation_bytes = m3.maxMemoryAllocationSize;
  c.driver = v12 ? std::string(drv.driverName) + " " + drv.driverInfo
                 : "driver version " + std::to_string(p.driverVersion);

  if (v12) {
    VkPhysicalDeviceVulkan11Features f11{};
    f11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
    VkPhysicalDeviceVulkan12Features f12{};
    f12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
    f11.pNext = &f12;
    VkPhysicalDeviceFeatures2 f2{};
    f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    f2.pNext = &f11;
    vkGetPhysicalDeviceFeatures2(d, &f2);
    c.storage_16bit = f11.storageBuffer16BitAccess;
    c.storage_8bit = f12.storageBuffer8BitAccess;
    c.shader_float16 = f12.shaderFloat16;
    c.shader_int8 = f12.shaderInt8;
    c.buffer_device_address = f12.bufferDeviceAddress;
    c.shader_int64 = f2.features.shaderInt64;
  }

  uint32_t n_ext = 0;
  vkEnumerateDeviceExtensionProperties(d, nullptr, &n_ext, nullptr);
  std::vector<VkExtensionProperties> ext(n_ext);
  if (n_ext > 0) vkEnumerateDeviceExtensionProperties(d, nullptr, &n_ext, ext.data());
  for (const auto& e : ext) {
    if (std::strcmp(e.extensionName, "VK_KHR_cooperative_matrix") == 0) c.cooperative_matrix_khr = true;
    if (std::strcmp(e.extensionName, "VK_NV_cooperative_matrix") == 0) c.cooperative_matrix_nv = true;
  }

  VkPhysicalDeviceMemoryProperties mem{};
  vkGetPhysicalDeviceMemoryProperties(d, &mem);
  for (uint32_t h = 0; h < mem.memoryHeapCount; ++h) {
    const bool local = (mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) != 0;
    c.heaps.push_back({mem.memoryHeaps[h].size, local});
    if (local && mem.memoryHeaps[h].size > c.device_local_bytes) c.device_local_bytes = mem.memoryHeaps[h].size;
  }

  uint32_t n_q = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(d, &n_q, nullptr);
  std::vector<VkQueueFamilyProperties> qs(n_q);
  if (n_q > 0) vkGetPhysicalDeviceQueueFamilyProperties(d, &n_q, qs.data());
  for (const auto& q : qs) c.compute_queue = c.compute_queue || (q.queueFlags & VK_QUEUE_COMPUTE_BIT) != 0;
  return c;
}

}  // namespace

std::string vk_result_name(VkResult r) {
  const char* name = "VK_ERROR_UNKNOWN";
  switch (r) {
    case VK_SUCCESS: name = "VK_SUCCESS"; break;
    case VK_ERROR_OUT_OF_HOST_MEMORY: name = "VK_ERROR_OUT_OF_HOST_MEMORY"; break;
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: name = "VK_ERROR_OUT_OF_DEVICE_MEMORY"; break;
    case VK_ERROR_INITIALIZATION_FAILED: name = "VK_ERROR_INITIALIZATION_FAILED"; break;
    case VK_ERROR_DEVICE_LOST: name = "VK_ERROR_DEVICE_LOST"; break;
    case VK_ERROR_INCOMPATIBLE_DRIVER: name = "VK_ERROR_INCOMPATIBLE_DRIVER"; break;
    case VK_ERROR_EXTENSION_NOT_PRESENT: name = "VK_ERROR_EXTENSION_NOT_PRESENT"; break;
    case VK_ERROR_FEATURE_NOT_PRESENT: name = "VK_ERROR_FEATURE_NOT_PRESENT"; break;
    case VK_ERROR_LAYER_NOT_PRESENT: name = "VK_ERROR_LAYER_NOT_PRESENT"; break;
    case VK_ERROR_TOO_MANY_OBJECTS: name = "VK_ERROR_TOO_MANY_OBJECTS"; break;
    default: break;
  }
  return "VkResult " + std::to_string(static_cast<int>(r)) + " (" + name + ")";
}

nlohmann::json to_json(const DeviceCaps& c) {
  nlohmann::json heaps = nlohmann::json::array();
  for (const auto& h : c.heaps) heaps.push_back({{"size_bytes", h.size_bytes}, {"device_local", h.device_local}});
  const std::string missing = check_device_requirements(c);
  return {{"index", c.index},
          {"name", c.name},
          {"type", c.type},
          {"driver", c.driver},
          {"api_version", c.api_version},
          {"vendor_id", c.vendor_id},
          {"device_id", c.device_id},
          {"memory_heaps", heaps},
          {"device_local_bytes", c.device_local_bytes},
          {"subgroup_size", c.subgroup_size},
          {"features",
           {{"subgroup_arithmetic", c.subgroup_arithmetic},
            {"shader_float16", c.shader_float16},
            {"shader_int8", c.shader_int8},
            {"shader_int64", c.shader_int64},
            {"storage_buffer_16bit", c.storage_16bit},
            {"storage_buffer_8bit", c.storage_8bit},
            {"buffer_device_address", c.buffer_device_address},
            {"cooperative_matrix_khr", c.cooperative_matrix_khr},
            {"cooperative_matrix_nv", c.cooperative_matrix_nv}}},
          {"limits",
           {{"max_workgroup_invocations", c.max_workgroup_invocations},
            {"max_shared_memory_bytes", c.max_shared_memory_bytes},
            {"max_memory_allocation_bytes", c.max_memory_allocation_bytes}}},
          {"usable", missing.empty()},
          {"missing", missing}};
}

std::string check_device_requirements(const DeviceCaps& c) {
  std::string missing;
  auto need = [&](bool ok, const std::string& what) {
    if (!ok) missing += (missing.empty() ? "" : ", ") + what;
  };
  need(c.api_version_raw >= VK_API_VERSION_1_2, "Vulkan 1.2 (device has " + c.api_version + ")");
  need(c.compute_queue, "a compute queue");
  need(c.buffer_device_address, "the bufferDeviceAddress feature");
  need(c.max_workgroup_invocations >= 256,
       "256 invocations per workgroup (has " + std::to_string(c.max_workgroup_invocations) + ")");
  need(c.max_shared_memory_bytes >= 16384,
       "16384 bytes of shared memory (has " + std::to_string(c.max_shared_memory_bytes) + ")");
  return missing;
}

Result<std::vector<DeviceCaps>> list_vulkan_devices() {
  KAKEYA_ASSIGN_OR_RETURN(VkInstance inst, create_instance());
  std::vector<DeviceCaps> out;
  const auto devs = physical_devices(inst);
  for (uint32_t i = 0; i < devs.size(); ++i) out.push_back(read_caps(devs[i], i));
  vkDestroyInstance(inst, nullptr);
  if (out.empty()) return make_error("backend_unavailable", "vulkan: the loader found no physical device");
  return out;
}

uint32_t default_device_index(const std::vector<DeviceCaps>& devices) {
  for (const auto& d : devices)
    if (d.type == "discrete_gpu" && check_device_requirements(d).empty()) return d.index;
  return 0;
}

Result<std::unique_ptr<VulkanDevice>> VulkanDevice::open(int index) {
  KAKEYA_ASSIGN_OR_RETURN(VkInstance inst, create_instance());
  std::unique_ptr<VulkanDevice> v(new VulkanDevice());
  v->instance_ = inst;
  const auto devs = physical_devices(inst);
  if (devs.empty()) return make_error("backend_unavailable", "vulkan: the loader found no physical device");
  std::vector<DeviceCaps> caps;
  for (uint32_t i = 0; i < devs.size(); ++i) caps.push_back(read_caps(devs[i], i));
  const uint32_t pick = index < 0 ? default_device_index(caps) : static_cast<uint32_t>(index);
  if (pick >= devs.size()) {
    return make_error("bad_param", "vulkan:" + std::to_string(index) + ": this machine has " +
                                       std::to_string(devs.size()) + " Vulkan device(s), numbered from 0");
  }
  v->caps_ = caps[pick];
  v->physical_ = devs[pick];
  const std::string missing = check_device_requirements(v->caps_);
  if (!missing.empty()) {
    return make_error("backend_unavailable", "vulkan:" + std::to_string(pick) + " (" + v->caps_.name +
                                                 ") lacks what the backend needs: " + missing);
  }
  uint32_t n_q = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(v->physical_, &n_q, nullptr);
  std::vector<VkQueueFamilyProperties> qs(n_q);
  vkGetPhysicalDeviceQueueFamilyProperties(v->physical_, &n_q, qs.data());
  // Prefer a compute-only family (async compute on GPUs), else any with compute.
  uint32_t family = UINT32_MAX;
  for (uint32_t i = 0; i < n_q; ++i)
    if ((qs[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && !(qs[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) family = i;
  for (uint32_t i = 0; i < n_q && family == UINT32_MAX; ++i)
    if (qs[i].queueFlags & VK_QUEUE_COMPUTE_BIT) family = i;
  v->queue_family_ = family;

  const float prio = 1.0f;
  VkDeviceQueueCreateInfo qci{};
  qci.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  qci.queueFamilyIndex = family;
  qci.queueCount = 1;
  qci.pQueuePriorities = &prio;
  VkPhysicalDeviceVulkan12Features f12{};
  f12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  f12.bufferDeviceAddress = VK_TRUE;
  VkPhysicalDeviceFeatures2 f2{};
  f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  f2.pNext = &f12;
  VkDeviceCreateInfo dci{};
  dci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  dci.pNext = &f2;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  VkResult rc = vkCreateDevice(v->physical_, &dci, nullptr, &v->device_);
  if (rc != VK_SUCCESS) {
    return make_error("backend_unavailable", "vulkan:" + std::to_string(pick) + " (" + v->caps_.name +
                                                 "): vkCreateDevice failed with " + vk_result_name(rc));
  }
  vkGetDeviceQueue(v->device_, family, 0, &v->queue_);
  VkCommandPoolCreateInfo pci{};
  pci.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = family;
  rc = vkCreateCommandPool(v->device_, &pci, nullptr, &v->pool_);
  if (rc != VK_SUCCESS) {
    return make_error("backend_unavailable", "vulkan: vkCreateCommandPool failed with " + vk_result_name(rc));
  }
  vkGetPhysicalDeviceMemoryProperties(v->physical_, &v->memory_);
  return v;
}

VulkanDevice::~VulkanDevice() {
  if (device_ != VK_NULL_HANDLE) {
    vkDeviceWaitIdle(device_);
    if (pool_ != VK_NULL_HANDLE) vkDestroyCommandPool(device_, pool_, nullptr);
    vkDestroyDevice(device_, nullptr);
  }
  if (instance_ != VK_NULL_HANDLE) vkDestroyInstance(instance_, nullptr);
}

}  // namespace kakeya::engine
