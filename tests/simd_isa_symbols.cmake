# Checks that an ISA's kernel object defines no external symbol but its entry point
# (duet::simd::<isa>::isa_kernels): code compiled with AVX2 or AVX-512 flags must not
# define inline functions that the linker could pick for callers on other CPUs.
# Usage: cmake -DNM=<nm> -DOBJECTS=<objects> -DEXPECTED=<demangled name> -P simd_isa_symbols.cmake
foreach(object IN LISTS OBJECTS)
  execute_process(COMMAND ${NM} -C --defined-only --extern-only ${object}
                  OUTPUT_VARIABLE symbols RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${NM} failed on ${object}")
  endif()
  string(REPLACE "\n" ";" lines "${symbols}")
  set(found FALSE)
  foreach(line IN LISTS lines)
    if(line STREQUAL "")
      continue()
    endif()
    if(line MATCHES " DW\\.ref\\.__gxx_personality_v0$")
      continue()  # the exception personality's reference, data shared by every object
    endif()
    if(line MATCHES " T ${EXPECTED}\\(\\)$")
      set(found TRUE)
      continue()
    endif()
    message(FATAL_ERROR "${object} defines an unexpected external symbol: ${line}")
  endforeach()
  if(NOT found)
    message(FATAL_ERROR "${object} does not define ${EXPECTED}()")
  endif()
endforeach()
message(STATUS "${EXPECTED}: the only external symbol")
