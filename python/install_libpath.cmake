# Run by `cmake --install` (python/CMakeLists.txt): writes the installed package's
# _libpath.py with the path from the package to the installed libzcoll, relative when
# both lie under the prefix, so that moving the installed tree keeps them together.
foreach(var ZCOLL_PY_PACKAGE_DIR ZCOLL_PY_LIB_DIR)
  if(NOT IS_ABSOLUTE "${${var}}")
    set(${var} "${CMAKE_INSTALL_PREFIX}/${${var}}")
  endif()
endforeach()
file(RELATIVE_PATH rel "${ZCOLL_PY_PACKAGE_DIR}" "${ZCOLL_PY_LIB_DIR}/${ZCOLL_PY_LIB_NAME}")
set(out "$ENV{DESTDIR}${ZCOLL_PY_PACKAGE_DIR}/_libpath.py")
message(STATUS "Installing: ${out}")
file(WRITE "${out}" "\"\"\"Written by cmake --install: the library, relative to this package.\"\"\"
LIBRARY = \"${rel}\"
")
