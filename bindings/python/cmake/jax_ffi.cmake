# kolo.jax's XLA FFI handlers (libkolo_xla_ffi.so), built where a Python with jax is at hand: jaxlib
# ships XLA's FFI headers. KOLO_JAX_PYTHON names that Python (.ci/setup passes its virtual environment's;
# under pip, the environment kolo is installed into). KOLO_WITH_JAX: AUTO, ON (required) or OFF.
# Empty means the build's Python, decided at each configure rather than cached: a build folder that
# another environment reuses (pip's build-dir) follows that environment.
set(KOLO_JAX_PYTHON "" CACHE FILEPATH "A Python whose jaxlib provides XLA's FFI headers (empty: the build's Python)")
if(NOT KOLO_JAX_PYTHON)
  set(KOLO_JAX_PYTHON "${Python_EXECUTABLE}")
endif()
set(KOLO_WITH_JAX "AUTO" CACHE STRING "kolo.jax's XLA handlers: AUTO, ON or OFF (1 and 0 too)")
kolo_switch(KOLO_WITH_JAX)

set(_jax_found FALSE)
if(NOT KOLO_WITH_JAX STREQUAL "OFF")
  kolo_query_python(_jax "${KOLO_JAX_PYTHON}" "import jax, jax.ffi; print(jax.__version__); print(jax.ffi.include_dir())")
  if(_jax_OK)
    list(GET _jax_OUTPUT 1 KOLO_XLA_FFI_INCLUDE)
    if(EXISTS "${KOLO_XLA_FFI_INCLUDE}/xla/ffi/api/ffi.h")
      set(_jax_found TRUE)
    else()
      set(_jax_ERROR "its jaxlib has no ${KOLO_XLA_FFI_INCLUDE}/xla/ffi/api/ffi.h")
    endif()
  endif()
endif()
kolo_framework_choice(JAX ${KOLO_WITH_JAX} ${_jax_found} "${KOLO_JAX_PYTHON} cannot import jax.ffi (${_jax_ERROR})")

if(KOLO_JAX_STATE STREQUAL "built")
  list(GET _jax_OUTPUT 0 KOLO_JAX_VERSION)
  set(KOLO_JAX_DETAIL "${KOLO_JAX_VERSION}")
  add_library(kolo_jax_ffi MODULE src/jax_ffi.cc)
  # Loaded by ctypes from kolo/jax; libkolo.so.0 sits one folder up once installed.
  set_target_properties(kolo_jax_ffi PROPERTIES OUTPUT_NAME kolo_xla_ffi LIBRARY_OUTPUT_DIRECTORY ${KOLO_PYTHON_DIR}/jax
                                                 INSTALL_RPATH "$ORIGIN/..")
  target_include_directories(kolo_jax_ffi SYSTEM PRIVATE ${KOLO_XLA_FFI_INCLUDE})
  target_link_libraries(kolo_jax_ffi PRIVATE kolo)
  target_compile_options(kolo_jax_ffi PRIVATE ${KOLO_WARNINGS})
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # XLA's c_api.h names struct members after typedefs, which GCC (not clang) rejects unless permissive.
    target_compile_options(kolo_jax_ffi PRIVATE -fpermissive)
  endif()
  add_dependencies(kolo_python kolo_jax_ffi)
  message(STATUS "kolo.jax: jax ${KOLO_JAX_VERSION}, XLA FFI headers from ${KOLO_XLA_FFI_INCLUDE}")
else()
  message(STATUS "kolo.jax: XLA handlers not built (${KOLO_JAX_DETAIL})")
endif()
