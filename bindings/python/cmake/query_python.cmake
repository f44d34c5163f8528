# kolo_query_python(<prefix> <python> <code>): runs `<python> -c <code>` and sets <prefix>_OK (whether it
# exited 0), <prefix>_OUTPUT (its stdout, one value a line) and <prefix>_ERROR (the last line of its
# stderr, e.g. "ModuleNotFoundError: No module named 'jax'").
#
# Under pip's build isolation the build's Python sees only the build requirements: pip points
# PYTHONPATH at a sitecustomize that hides site-packages. A framework installed in the environment kolo
# is being installed into would be missed there, so a failed query is run again without pip's two
# variables: kolo's native parts are built against the frameworks of that environment, with or
# without --no-build-isolation.
function(kolo_query_python prefix python code)
  execute_process(COMMAND ${python} -c "${code}" OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0 AND (DEFINED ENV{PYTHONPATH} OR DEFINED ENV{PYTHONNOUSERSITE}))
    execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=PYTHONPATH --unset=PYTHONNOUSERSITE ${python} -c "${code}"
                    OUTPUT_VARIABLE out2 ERROR_VARIABLE err2 RESULT_VARIABLE rc2 OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(rc2 EQUAL 0)
      set(rc 0)
      set(out "${out2}")
    endif()
  endif()
  string(STRIP "${err}" err)
  string(REGEX REPLACE "^.*\n" "" err "${err}")
  if(err STREQUAL "" AND NOT rc MATCHES "^[0-9]+$")
    set(err "${rc}")  # it did not start: rc says why ("No such file or directory")
  endif()
  if(rc EQUAL 0)
    set(${prefix}_OK TRUE PARENT_SCOPE)
  else()
    set(${prefix}_OK FALSE PARENT_SCOPE)
  endif()
  string(REPLACE "\n" ";" out "${out}")
  set(${prefix}_OUTPUT "${out}" PARENT_SCOPE)
  set(${prefix}_ERROR "${err}" PARENT_SCOPE)
endfunction()

# kolo_framework_choice(<name> <switch> <found> <what if missing>): the decision for one framework's
# part of the package. <switch> is AUTO, ON or OFF (kolo_switch); ON with nothing found stops the
# configuration. Sets KOLO_<name>_STATE (built, off or missing) and, where not built,
# KOLO_<name>_DETAIL (why).
function(kolo_framework_choice name switch found missing)
  if(switch STREQUAL "OFF")
    set(KOLO_${name}_STATE off PARENT_SCOPE)
    set(KOLO_${name}_DETAIL "KOLO_WITH_${name}=0" PARENT_SCOPE)
  elseif(found)
    set(KOLO_${name}_STATE built PARENT_SCOPE)
  elseif(switch STREQUAL "ON")
    message(FATAL_ERROR "KOLO_WITH_${name} is on (1), but ${missing}")
  else()
    set(KOLO_${name}_STATE missing PARENT_SCOPE)
    set(KOLO_${name}_DETAIL "${missing}" PARENT_SCOPE)
  endif()
endfunction()
