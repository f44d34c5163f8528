# kolo.torch is pure Python over kolo's C ABI (the _C extension): nothing is compiled against torch,
# so it needs no torch at build time and works with whichever torch (1.13 on) is installed later.
# KOLO_WITH_PYTORCH: AUTO (the default: installed), ON (also checks that KOLO_TORCH_PYTHON, by default
# the build's Python, has torch, and stops if not), OFF (importing kolo.torch then says so).
set(KOLO_TORCH_PYTHON "" CACHE FILEPATH "The Python whose torch KOLO_WITH_PYTORCH=ON checks for (empty: the build's)")
if(NOT KOLO_TORCH_PYTHON)
  set(KOLO_TORCH_PYTHON "${Python_EXECUTABLE}")
endif()
set(KOLO_WITH_PYTORCH "AUTO" CACHE STRING "kolo.torch: AUTO, ON or OFF (1 and 0 too)")
kolo_switch(KOLO_WITH_PYTORCH)

set(_torch_found TRUE)
set(_torch_ERROR "")
if(KOLO_WITH_PYTORCH STREQUAL "ON")
  kolo_query_python(_torch "${KOLO_TORCH_PYTHON}" "import torch; print(torch.__version__)")
  set(_torch_found ${_torch_OK})
endif()
kolo_framework_choice(PYTORCH ${KOLO_WITH_PYTORCH} ${_torch_found} "${KOLO_TORCH_PYTHON} cannot import torch (${_torch_ERROR})")
if(KOLO_PYTORCH_STATE STREQUAL "built")
  set(KOLO_PYTORCH_DETAIL "pure Python over kolo's C ABI: any torch from 1.13, installed before or after kolo")
endif()
message(STATUS "kolo.torch: ${KOLO_PYTORCH_STATE} (${KOLO_PYTORCH_DETAIL})")
