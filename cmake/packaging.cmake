# Debian packages: `cpack -G DEB` in the build folder (after the build) writes one .deb
# per install component (the install() rules name them):
#   libzcoll<soversion>  runtime  the shared library
#   libzcoll-dev         dev      zcoll.h, libzcoll.so, zcoll.pc, the CMake package, man3
#   zcoll-tools          tools    zcoll_run, zcoll_perf, zcoll_info and the man pages
#   python3-zcoll        python   the Python package (with ZCOLL_PYTHON)
#   python3-zcoll-torch  torch    zcoll.torch's C++ backend (when it is built)
# Library dependencies come from dpkg-shlibdeps (Debian: dpkg-dev); the packages depend
# on each other at this exact version. They install under /usr; configure with
# -DCMAKE_INSTALL_PREFIX=/usr for Debian's multiarch library folder.
set(CPACK_PACKAGE_NAME zcoll)
set(CPACK_PACKAGE_VENDOR zcoll)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "RDMA allreduce runtime")
set(ZCOLL_PACKAGE_MAINTAINER "zcoll maintainers <zcoll@localhost>" CACHE STRING
    "The Maintainer field of the Debian packages")
set(CPACK_PACKAGE_CONTACT "${ZCOLL_PACKAGE_MAINTAINER}")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The tools' libzcoll.so.0 is in no installed package when they are packaged: dpkg-shlibdeps
# finds it in the build tree; the dependency on libzcoll0 is the component's, below.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CMAKE_BINARY_DIR})
# A shlibs file in the library's package: packages built against it depend on this
# version or newer (only the runtime component has a shared library).
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
# The components' DEPENDS below become "Depends: libzcoll0 (= <version>)".
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)

set(CPACK_COMPONENTS_ALL runtime dev tools)
if(ZCOLL_PYTHON)
  list(APPEND CPACK_COMPONENTS_ALL python)
endif()
if(ZCOLL_TORCH_BUILT)
  list(APPEND CPACK_COMPONENTS_ALL torch)
endif()

set(zcoll_runtime_pkg libzcoll${PROJECT_VERSION_MAJOR})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME ${zcoll_runtime_pkg})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
# dlopen()ed, so dpkg-shlibdeps cannot see them: UCX (the transport between hosts without
# RDMA, and the registration cache's invalidation), PMIx (jobs started by srun or mpirun).
set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS libucx0)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SUGGESTS libpmix2)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
"RDMA allreduce runtime - shared library
 zcoll reduces a vector across processes and gives every process the result
 (allreduce), over one-sided RDMA writes (libibverbs), shared memory or UCX.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libzcoll-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DEPENDS runtime)
set(CPACK_COMPONENT_DEV_DESCRIPTION
"RDMA allreduce runtime - development files
 The header zcoll.h, the libzcoll.so link, the pkg-config file (zcoll.pc),
 the CMake package (find_package(zcoll)) and the functions' man pages for
 building programs with zcoll.")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME zcoll-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION net)
set(CPACK_COMPONENT_TOOLS_DEPENDS runtime)
set(CPACK_COMPONENT_TOOLS_DESCRIPTION
"RDMA allreduce runtime - tools
 zcoll_run starts the ranks of a job on one host, zcoll_perf measures the
 allreduce with nccl-tests' all_reduce_perf flags and table, zcoll_info prints
 the version and the configuration; with their man pages and zcoll(7).")

set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-zcoll)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
set(CPACK_COMPONENT_PYTHON_DEPENDS runtime)
set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS "python3, python3-numpy")
set(CPACK_COMPONENT_PYTHON_DESCRIPTION
"RDMA allreduce runtime - Python package
 The zcoll module: communicators and allreduce over numpy arrays and other
 buffers, through the shared library (ctypes).")

set(CPACK_DEBIAN_TORCH_PACKAGE_NAME python3-zcoll-torch)
set(CPACK_DEBIAN_TORCH_PACKAGE_SECTION python)
set(CPACK_COMPONENT_TORCH_DEPENDS python runtime) # it links libzcoll itself
set(CPACK_DEBIAN_TORCH_PACKAGE_DEPENDS "python3-torch")
set(CPACK_COMPONENT_TORCH_DESCRIPTION
"RDMA allreduce runtime - torch.distributed backend
 zcoll.torch: the torch.distributed backend \"zcoll\" (import zcoll.torch, then
 init_process_group(\"zcoll\")), a C++ extension for Debian's PyTorch.")

include(CPack)
