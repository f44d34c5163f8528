# What `pip install .` puts into site-packages: scikit-build-core (pyproject.toml at the repository's
# root) installs this component only. The package's sources and its generated _build_info.py; _C;
# libkolo as libkolo.so.0, the name _C and the others load from beside or above them (a wheel holds
# no symlinks, so the library is there once, under its SONAME); each framework's native part where
# built; and the launcher, as kolo/bin/kolorun, which the `kolorun` entry point (kolo/_launch.py) runs.
install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/kolo/ DESTINATION kolo COMPONENT python
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
install(FILES ${KOLO_PYTHON_DIR}/_build_info.py DESTINATION kolo COMPONENT python)
install(TARGETS kolo_python_C LIBRARY DESTINATION kolo COMPONENT python)
install(FILES $<TARGET_FILE:kolo> DESTINATION kolo RENAME libkolo.so.${PROJECT_VERSION_MAJOR} COMPONENT python)
install(TARGETS kolorun RUNTIME DESTINATION kolo/bin COMPONENT python)
install(TARGETS kolo_ompi_guard LIBRARY DESTINATION kolo COMPONENT python)
if(TARGET kolo_tf_ops)
  install(TARGETS kolo_tf_ops LIBRARY DESTINATION kolo/tensorflow COMPONENT python)
endif()
if(TARGET kolo_jax_ffi)
  install(TARGETS kolo_jax_ffi LIBRARY DESTINATION kolo/jax COMPONENT python)
endif()

# KOLO_CMAKE_ARGS reaches CMake as scikit-build-core's CMAKE_ARGS (pyproject.toml), which keeps a
# CMAKE_ARGS already set: then one of the two would be dropped without a word.
if(DEFINED ENV{KOLO_CMAKE_ARGS} AND NOT "$ENV{KOLO_CMAKE_ARGS}" STREQUAL "$ENV{CMAKE_ARGS}")
  message(FATAL_ERROR "KOLO_CMAKE_ARGS and CMAKE_ARGS are both set ('$ENV{KOLO_CMAKE_ARGS}', '$ENV{CMAKE_ARGS}'): "
                      "set one of them")
endif()
