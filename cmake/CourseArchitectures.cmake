# The one place that decides which GPU architectures are built.
#
# COURSE_CUDA_ARCHITECTURES is the list a user overrides (-DCOURSE_CUDA_ARCHITECTURES=...).
# The default needs no GPU at configure time (no "native"):
#   80-real    machine code for compute capability 8.x (A100, RTX 30xx/40xx run it)
#   90-real    machine code for 9.0 (H100, H200)
#   90-virtual PTX that the driver compiles for newer GPUs (forward compatibility)
# Each chapter states the minimum it needs; course_chapter_architectures() keeps the
# entries that satisfy it and, for architecture-specific chapters, builds sm_XXa.
if(NOT CMAKE_SCRIPT_MODE_FILE)
  set(COURSE_CUDA_ARCHITECTURES "80-real;90-real;90-virtual"
    CACHE STRING "CUDA architectures for every chapter (filtered by each chapter's minimum)")
endif()

# Stops the configure step, with one message naming the accepted forms, when <list> (the value
# of COURSE_CUDA_ARCHITECTURES) is empty or has an entry CMake and nvcc would not both take:
# a compute capability written without its dot (89, 90, 100, 120), optionally with an `a`
# (architecture-specific) and `-real` or `-virtual`.
function(course_validate_architectures list)
  set(forms "entries like 80, 89-real, 90-virtual or 90a-real (compute capability 8.9 is written 89)")
  if(list STREQUAL "")
    message(FATAL_ERROR "COURSE_CUDA_ARCHITECTURES is empty: it takes a ;-list of ${forms}")
  endif()
  foreach(entry IN LISTS list)
    if(NOT entry MATCHES "^[1-9][0-9][0-9]?a?(-real|-virtual)?$")
      if(entry MATCHES "^([0-9]+)\\.([0-9]+)")
        set(hint ": write ${CMAKE_MATCH_1}.${CMAKE_MATCH_2} as ${CMAKE_MATCH_1}${CMAKE_MATCH_2}")
      else()
        set(hint "")
      endif()
      message(FATAL_ERROR "COURSE_CUDA_ARCHITECTURES entry '${entry}' is not valid${hint}; it takes a ;-list of ${forms}")
    endif()
  endforeach()
endfunction()

# Sets <out_var> to the architectures for a chapter needing compute capability <min_arch>
# (e.g. 80, 90, or 90a for architecture-specific instructions).
function(course_chapter_architectures out_var min_arch)
  if(min_arch MATCHES "^([0-9]+)a$")
    # sm_90a code runs only on 9.0 and has no forward-compatible PTX.
    set(${out_var} "${min_arch}-real" PARENT_SCOPE)
    return()
  endif()
  set(kept "")
  set(lowest "")
  foreach(entry IN LISTS COURSE_CUDA_ARCHITECTURES)
    if(NOT entry MATCHES "^([0-9]+)")
      message(FATAL_ERROR "COURSE_CUDA_ARCHITECTURES entry '${entry}' is not of the form 90, 90-real or 90-virtual")
    endif()
    set(number "${CMAKE_MATCH_1}")
    if(number GREATER_EQUAL min_arch)
      list(APPEND kept "${entry}")
      if(lowest STREQUAL "" OR number LESS lowest)
        set(lowest "${number}")
      endif()
    endif()
  endforeach()
  # GPUs between the chapter's minimum and the lowest listed architecture run PTX for the minimum.
  if(lowest STREQUAL "" OR lowest GREATER min_arch)
    list(PREPEND kept "${min_arch}-virtual")
  endif()
  set(${out_var} "${kept}" PARENT_SCOPE)
endfunction()

# Checked once here, so that a bad value stops the configure step with one message.
if(CMAKE_SCRIPT_MODE_FILE)
  # cmake -DCOURSE_CUDA_ARCHITECTURES=<list> -P CourseArchitectures.cmake: the check alone (a test).
  course_validate_architectures("${COURSE_CUDA_ARCHITECTURES}")
  message("COURSE_CUDA_ARCHITECTURES '${COURSE_CUDA_ARCHITECTURES}' is valid")
else()
  course_validate_architectures("${COURSE_CUDA_ARCHITECTURES}")
endif()
