# Optional components (GUI, CUDA, HIP): each ktune_*_missing sets its output variable to why the
# component cannot be built here, with what to install, or to "" when it can. The find_package
# calls stay in the top-level CMakeLists.txt, whose scope keeps the variables they set.

function(ktune_gui_missing out)
  # Debian package of each Qt module the workbench needs. Qt6Charts' CMake package also needs
  # Qt6OpenGL and XKB, which `apt-get --no-install-recommends libqt6charts6-dev` leaves out.
  set(_packages
    Widgets "qt6-base-dev"
    Charts "libqt6charts6-dev libqt6opengl6-dev libgl1-mesa-dev libxkbcommon-dev"
    Svg "libqt6svg6-dev"
    Test "qt6-base-dev"
    Concurrent "qt6-base-dev")
  set(_why "")
  list(LENGTH _packages _n)
  math(EXPR _last "${_n} - 1")
  foreach(_i RANGE 0 ${_last} 2)
    list(GET _packages ${_i} _module)
    math(EXPR _j "${_i} + 1")
    list(GET _packages ${_j} _debs)
    if(NOT TARGET Qt6::${_module})
      set(_why "Qt 6 ${_module} not found: install ${_debs} (Debian) or set CMAKE_PREFIX_PATH to a Qt 6 with ${_module}")
      break()
    endif()
  endforeach()
  set(${out} "${_why}" PARENT_SCOPE)
endfunction()

function(ktune_cuda_missing out)
  if(NOT CUDAToolkit_FOUND)
    set(${out} "CUDA toolkit not found: install it (nvcc on PATH or in /usr/local/cuda) or set CUDAToolkit_ROOT" PARENT_SCOPE)
  elseif(NOT TARGET CUDA::nvrtc OR NOT TARGET CUDA::cuda_driver)
    set(${out} "CUDA toolkit ${CUDAToolkit_VERSION} lacks NVRTC or the driver API library (libnvrtc, libcuda stub)" PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

function(ktune_hip_missing out)
  set(_debs "install hipcc libamdhip64-dev rocm-device-libs libhiprtc-builtins5 (Debian 12) or ROCm's HIP SDK (/opt/rocm)")
  if(NOT KTUNE_HIPCC)
    set(${out} "hipcc not found: ${_debs}" PARENT_SCOPE)
  elseif(NOT KTUNE_HIP_LIBRARY OR NOT KTUNE_HIP_INCLUDE_DIR)
    set(${out} "the HIP runtime (libamdhip64 and hip/hip_runtime_api.h) not found: ${_debs}" PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

# option(NAME ...) defaulting to ON where nothing is missing; ON with something missing stops here.
function(ktune_component_option name help missing)
  if("${missing}" STREQUAL "")
    option(${name} "${help}" ON)
  else()
    option(${name} "${help}" OFF)
    if(${name})
      message(FATAL_ERROR "${name}=ON, but ${missing}. Configure with -D${name}=OFF to build without it.")
    endif()
  endif()
endfunction()

function(ktune_component_summary label name missing)
  if(${name})
    message(STATUS "ktune: ${label}=ON")
  elseif("${missing}" STREQUAL "")
    message(STATUS "ktune: ${label}=OFF (turned off with -D${name}=OFF)")
  else()
    message(STATUS "ktune: ${label}=OFF (${missing})")
  endif()
endfunction()
