# ktune_embed_kernels(TARGET DIR NAMESPACE GLOBS...): adds to TARGET a generated source defining
# NAMESPACE::embedded_kernel_files(), the files of DIR matching GLOBS (a backend's built-in kernel
# sources and specs), regenerated when one changes.
function(ktune_embed_kernels target dir namespace)
  set(_globs)
  foreach(g ${ARGN})
    list(APPEND _globs ${dir}/${g})
  endforeach()
  file(GLOB _files CONFIGURE_DEPENDS ${_globs})
  set(_out ${CMAKE_CURRENT_BINARY_DIR}/embedded_kernels.cpp)
  string(REPLACE ";" "|" _list "${_files}")  # one shell word
  add_custom_command(OUTPUT ${_out}
    COMMAND ${CMAKE_COMMAND} -DFILES=${_list} -DOUTPUT=${_out} -DNAMESPACE=${namespace}
            -P ${PROJECT_SOURCE_DIR}/cmake/embed_kernels.cmake
    DEPENDS ${_files} ${PROJECT_SOURCE_DIR}/cmake/embed_kernels.cmake
    COMMENT "Embedding built-in kernels of ${dir}" VERBATIM)
  target_sources(${target} PRIVATE ${_out})
endfunction()
