# The one place that decides which GPU architectures are built.
#
# COURSE_CUDA_ARCHITECTURES is the list a user overrides (-DCOURSE_CUDA_ARCHITECTURES=...).
# The default needs no GPU at configure time (no "native"):
#   80-real    machine code for compute capability 8.x (A100, RTX 30xx/40xx run it)
#   90-real    machine code for 9.0 (H100, H200)
#   90-virtual PTX that the driver compiles for newer GPUs (forward compatibility)
# Each chapter states the minimum it needs; course_chapter_architectures() keeps the
# entries that satisfy it and, for architecture-specific chapters, builds sm_XXa.
if(CMAKE_SCRIPT_MODE_FILE)
  cmake_minimum_required(VERSION 3.25)  # the check alone, run as a script: today's policies
else()
  set(COURSE_CUDA_ARCHITECTURES "80-real;90-real;90-virtual"
    CACHE STRING "CUDA architectures for every chapter (filtered by each chapter's minimum)")
endif()

# Stops the configure step, with one message naming the accepted forms, when <list> (the value
# of COURSE_CUDA_ARCHITECTURES) is empty or has an entry CMake and nvcc would not both take:
# a compute capability written without its dot (89, 90, 100, 120), optionally with an `a`
# (architecture-specific) and `-real` or `-virtual`.
set(COURSE_LOWEST_ARCHITECTURE 75)
function(course_validate_architectures list)
  # The architectures nvcc knows: COURSE_NVCC_ARCHS (a test's stand-in, e.g. "compute_75;compute_90"),
  # or nvcc --list-gpu-arch; unknown (no check) when neither is at hand.
  set(known "${COURSE_NVCC_ARCHS}")
  if(NOT known AND CMAKE_CUDA_COMPILER)
    execute_process(COMMAND "${CMAKE_CUDA_COMPILER}" --list-gpu-arch OUTPUT_VARIABLE listed ERROR_QUIET
                    RESULT_VARIABLE listed_rc)
    if(listed_rc EQUAL 0)
      string(REGEX MATCHALL "compute_[0-9]+" known "${listed}")
    endif()
  endif()
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
    # An entry no chapter can use: below the lowest minimum of a chapter (01_sync_copy needs 7.5).
    string(REGEX MATCH "^[0-9]+" number "${entry}")
    if(number LESS COURSE_LOWEST_ARCHITECTURE)
      message(FATAL_ERROR "COURSE_CUDA_ARCHITECTURES entry '${entry}' is below ${COURSE_LOWEST_ARCHITECTURE}, the lowest compute capability a chapter needs (7.5, chapter 01): no chapter can be built for it")
    endif()
    # An entry nvcc does not know (its --list-gpu-arch): the build would fail in nvcc.
    if(known AND NOT "compute_${number}" IN_LIST known)
      string(REPLACE "compute_" "" known_numbers "${known}")
      string(REPLACE ";" ", " known_numbers "${known_numbers}")
      message(FATAL_ERROR "COURSE_CUDA_ARCHITECTURES entry '${entry}' is not a compute capability this nvcc knows (it knows ${known_numbers})")
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
