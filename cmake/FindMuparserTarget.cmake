# muparser ships a CMake config only in newer releases and a pkg-config file in Debian's package;
# MUPARSER_ROOT lets a machine without the package (the GPU box) point at carried headers and library.
find_package(muparser CONFIG QUIET)
if(NOT TARGET muparser::muparser)
  find_path(MUPARSER_INCLUDE_DIR muParser.h HINTS ${MUPARSER_ROOT}/include ENV MUPARSER_ROOT PATH_SUFFIXES include)
  find_library(MUPARSER_LIBRARY NAMES muparser HINTS ${MUPARSER_ROOT}/lib ENV MUPARSER_ROOT PATH_SUFFIXES lib)
  if(NOT MUPARSER_INCLUDE_DIR OR NOT MUPARSER_LIBRARY)
    message(FATAL_ERROR "muparser not found: install libmuparser-dev, or set MUPARSER_ROOT to a folder with include/muParser.h and lib/libmuparser.so")
  endif()
  add_library(muparser::muparser UNKNOWN IMPORTED)
  set_target_properties(muparser::muparser PROPERTIES
    IMPORTED_LOCATION ${MUPARSER_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${MUPARSER_INCLUDE_DIR})
endif()
