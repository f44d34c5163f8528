# kolo_switch(<variable>): a build choice that is AUTO, ON or OFF, as CMake writes them or as pip's
# environment gives them in Horovod's manner (KOLO_WITH_CUDA=1, =0, =auto; any case, true/false and
# yes/no too), normalized to AUTO, ON or OFF. Anything else stops the configuration, naming it.
function(kolo_switch variable)
  string(TOUPPER "${${variable}}" value)
  if(value STREQUAL "" OR value STREQUAL "AUTO")
    set(value AUTO)
  elseif(value MATCHES "^(1|ON|TRUE|YES|Y)$")
    set(value ON)
  elseif(value MATCHES "^(0|OFF|FALSE|NO|N)$")
    set(value OFF)
  else()
    message(FATAL_ERROR "${variable}='${${variable}}': expected 1, 0 or auto")
  endif()
  set(${variable} ${value} PARENT_SCOPE)
endfunction()
