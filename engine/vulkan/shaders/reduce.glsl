// Workgroup reductions: subgroup arithmetic when compiled with USE_SUBGROUP (the *_sg modules,
// chosen when the device has it), shared memory otherwise. Every invocation of the workgroup
// must call them (uniform control flow); every invocation gets the result.
#if USE_SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : require
shared float red_partial[64];  // one per subgroup (WG / subgroup size <= 64)
float wg_sum(float v) {
  const float s = subgroupAdd(v);
  if (gl_SubgroupInvocationID == 0u) red_partial[gl_SubgroupID] = s;
  barrier();
  float t = 0.0;
  for (uint i = 0u; i < gl_NumSubgroups; ++i) t += red_partial[i];
  barrier();
  return t;
}
float wg_max(float v) {
  const float s = subgroupMax(v);
  if (gl_SubgroupInvocationID == 0u) red_partial[gl_SubgroupID] = s;
  barrier();
  float t = red_partial[0];
  for (uint i = 1u; i < gl_NumSubgroups; ++i) t = max(t, red_partial[i]);
  barrier();
  return t;
}
#else
shared float red_buf[256];
float wg_sum(float v) {
  red_buf[gl_LocalInvocationID.x] = v;
  barrier();
  for (uint s = WG / 2u; s > 0u; s >>= 1) {
    if (gl_LocalInvocationID.x < s) red_buf[gl_LocalInvocationID.x] += red_buf[gl_LocalInvocationID.x + s];
    barrier();
  }
  const float t = red_buf[0];
  barrier();
  return t;
}
float wg_max(float v) {
  red_buf[gl_LocalInvocationID.x] = v;
  barrier();
  for (uint s = WG / 2u; s > 0u; s >>= 1) {
    if (gl_LocalInvocationID.x < s)
      red_buf[gl_LocalInvocationID.x] = max(red_buf[gl_LocalInvocationID.x], red_buf[gl_LocalInvocationID.x + s]);
    barrier();
  }
  const float t = red_buf[0];
  barrier();
  return t;
}
#endif
