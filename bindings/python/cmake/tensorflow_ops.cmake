# kolo.tensorflow's ops (kolo_tf_ops.so), built against the headers and framework library of the
# TensorFlow that KOLO_TF_PYTHON has (by default KOLO_JAX_PYTHON, the virtual environment .ci/setup
# makes; under pip, the environment kolo is installed into), as tf.sysconfig gives them, and loaded by
# tf.load_op_library. KOLO_WITH_TENSORFLOW: AUTO (built where TensorFlow is found), ON (required), OFF.
set(KOLO_TF_PYTHON "" CACHE FILEPATH "A Python with TensorFlow, for kolo.tensorflow's ops (empty: KOLO_JAX_PYTHON's)")
if(NOT KOLO_TF_PYTHON)
  set(KOLO_TF_PYTHON "${KOLO_JAX_PYTHON}")
endif()
set(KOLO_WITH_TENSORFLOW "AUTO" CACHE STRING "kolo.tensorflow's ops: AUTO, ON or OFF (1 and 0 too)")
kolo_switch(KOLO_WITH_TENSORFLOW)

set(_tf_found FALSE)
if(NOT KOLO_WITH_TENSORFLOW STREQUAL "OFF")
  kolo_query_python(_tf "${KOLO_TF_PYTHON}" "import tensorflow as tf, tensorflow.sysconfig as c
print(tf.__version__); print(c.get_include()); print(c.get_lib())
print(' '.join(f[2:] for f in c.get_compile_flags() if f.startswith('-D')))")
  set(_tf_found ${_tf_OK})
endif()
kolo_framework_choice(TENSORFLOW ${KOLO_WITH_TENSORFLOW} ${_tf_found}
                      "${KOLO_TF_PYTHON} cannot import tensorflow (${_tf_ERROR})")

if(KOLO_TENSORFLOW_STATE STREQUAL "built")
  list(GET _tf_OUTPUT 0 KOLO_TF_VERSION)
  list(GET _tf_OUTPUT 1 KOLO_TF_INCLUDE)
  list(GET _tf_OUTPUT 2 KOLO_TF_LIB)
  list(GET _tf_OUTPUT 3 _tf_defines)
  separate_arguments(_tf_defines UNIX_COMMAND "${_tf_defines}")
  set(KOLO_TENSORFLOW_DETAIL "${KOLO_TF_VERSION}")
  add_library(kolo_tf_ops MODULE src/tf_op_base.cc src/tf_reduce_ops.cc src/tf_gather_ops.cc src/tf_broadcast_op.cc
                          src/tf_sync_ops.cc src/tf_completion.cc)
  set_target_properties(kolo_tf_ops PROPERTIES OUTPUT_NAME kolo_tf_ops PREFIX "" LIBRARY_OUTPUT_DIRECTORY
                                               ${KOLO_PYTHON_DIR}/tensorflow INSTALL_RPATH "$ORIGIN/.."
                                               BUILD_RPATH "${KOLO_TF_LIB}")
  target_include_directories(kolo_tf_ops SYSTEM PRIVATE ${KOLO_TF_INCLUDE})
  # TensorFlow's ABI and alignment settings: the -D flags of tf.sysconfig's compile flags.
  target_compile_definitions(kolo_tf_ops PRIVATE ${_tf_defines})
  target_link_directories(kolo_tf_ops PRIVATE ${KOLO_TF_LIB})
  target_link_libraries(kolo_tf_ops PRIVATE kolo -l:libtensorflow_framework.so.2)
  target_compile_options(kolo_tf_ops PRIVATE ${KOLO_WARNINGS})
  add_dependencies(kolo_python kolo_tf_ops)
  message(STATUS "kolo.tensorflow: TensorFlow ${KOLO_TF_VERSION} from ${KOLO_TF_INCLUDE}")
else()
  message(STATUS "kolo.tensorflow: ops not built (${KOLO_TENSORFLOW_DETAIL})")
endif()
