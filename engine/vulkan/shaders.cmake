# The Vulkan backend's shaders: engine/vulkan/shaders/*.comp compiled by glslc to SPIR-V 1.5
# (Vulkan 1.2), and embedded into kakeya_engine_lib as a generated source (no files are looked up
# at run time). Shaders that include reduce.glsl are compiled twice: <name> with shared-memory
# reductions and <name>_sg with subgroup arithmetic (vk_pipelines.h picks per device).
set(_dir ${CMAKE_SOURCE_DIR}/engine/vulkan/shaders)
set(_out ${CMAKE_BINARY_DIR}/generated/shaders)
file(MAKE_DIRECTORY ${_out})
file(GLOB _comps CONFIGURE_DEPENDS ${_dir}/*.comp)
file(GLOB _includes CONFIGURE_DEPENDS ${_dir}/*.glsl)
set(_spvs "")
foreach(comp ${_comps})
  get_filename_component(name ${comp} NAME_WE)
  file(READ ${comp} _text)
  set(_variants "${name}:0")
  if(_text MATCHES "#include \"reduce.glsl\"")
    list(APPEND _variants "${name}_sg:1")
  endif()
  foreach(v ${_variants})
    string(REPLACE ":" ";" _pair ${v})
    list(GET _pair 0 _vname)
    list(GET _pair 1 _sg)
    add_custom_command(OUTPUT ${_out}/${_vname}.spv
      COMMAND ${KAKEYA_GLSLC} --target-env=vulkan1.2 -O -Werror -I${_dir} -DUSE_SUBGROUP=${_sg}
              ${comp} -o ${_out}/${_vname}.spv
      DEPENDS ${comp} ${_includes}
      COMMENT "glslc ${_vname}.spv"
      VERBATIM)
    list(APPEND _spvs ${_out}/${_vname}.spv)
  endforeach()
endforeach()
set(_embedded ${CMAKE_BINARY_DIR}/generated/vulkan_shaders.cpp)
add_custom_command(OUTPUT ${_embedded}
  COMMAND ${CMAKE_COMMAND} -DOUT=${_embedded} "-DSPV=${_spvs}" -P ${CMAKE_SOURCE_DIR}/cmake/embed_spirv.cmake
  DEPENDS ${_spvs} ${CMAKE_SOURCE_DIR}/cmake/embed_spirv.cmake
  COMMENT "embedding SPIR-V shaders"
  VERBATIM)
target_sources(kakeya_engine_lib PRIVATE ${_embedded})
