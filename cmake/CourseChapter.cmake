# course_add_chapter(): everything one chapter folder needs, written once.
#
#   course_add_chapter(
#     LESSONS   memcpy_async stencil   # the lesson programs, X.cu each; the first is the chapter's lesson
#     LAB       memcpy_async_lab       # the lab program, X.cu (optional): sweeps, alternatives, comparisons
#     MIN_ARCH  80                     # compute capability needed: 75, 80, 90 or 90a
#     PTX_ARCHS 90                     # more architectures to emit PTX for (codegen tests read it)
#     LIBRARIES CUDA::cublas)          # extra libraries of the lab and the tests (optional)
#
# For folder NN_topic it creates:
#   target NN_topic          the first lesson (executable named after it), a CTest test labelled chapter
#   target NN_topic_<name>   every further lesson and the lab (executable <name>); CTest tests
#                            NN_topic.<name>, labelled chapter (lessons) or lab (the lab)
#   target NN_topic_<stem>   every <stem>_test.cu in the folder: a GoogleTest suite (host or gpu tests)
#   <program>.compute_<arch>.ptx for every program, read by the chapter's codegen tests
#                            (course/codegen.hpp: course::chapter_ptx)
#
# Programs and tests keep one rule for main(): a lesson's main is compiled unless COURSE_NO_MAIN is
# defined, the lab's unless COURSE_NO_LAB_MAIN is. The lab includes its lesson (its main compiled
# out with COURSE_NO_MAIN); a test includes the programs it tests with both defined.
# Writes ${CMAKE_BINARY_DIR}/course_programs.txt, one line per program:
#   <chapter> <lesson|lab|test> <name> <target> <path of the executable>
# (the chapter's first lesson comes first)
# which scripts/gpu_check.sh reads to bench and sanitize every program.
set(COURSE_SKIP_RETURN_CODE 77)
set(COURSE_PROGRAMS_MANIFEST "${CMAKE_BINARY_DIR}/course_programs.txt")
file(WRITE "${COURSE_PROGRAMS_MANIFEST}" "")

function(course_add_chapter)
  cmake_parse_arguments(ARG "" "LAB;MIN_ARCH" "LESSONS;PTX_ARCHS;LIBRARIES" ${ARGN})
  foreach(unknown IN LISTS ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "course_add_chapter: unknown argument '${unknown}'")
  endforeach()
  get_filename_component(chapter "${CMAKE_CURRENT_SOURCE_DIR}" NAME)
  if(NOT ARG_LESSONS)
    message(FATAL_ERROR "${chapter}: course_add_chapter needs LESSONS (the lesson programs, first the main one)")
  endif()
  course_chapter_architectures(archs ${ARG_MIN_ARCH})
  message(STATUS "${chapter}: CUDA architectures ${archs}")

  # The chapter's headers and the shared library's: the PTX depends on them, not only on the .cu;
  # and on the chapter's other programs, which a lab includes (`#include "pipeline.cu"`).
  file(GLOB headers CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/*.hpp" "${CMAKE_CURRENT_SOURCE_DIR}/*.cuh"
       "${PROJECT_SOURCE_DIR}/common/course/*.hpp" "${PROJECT_SOURCE_DIR}/common/course/*.cuh")
  foreach(included IN LISTS ARG_LESSONS ARG_LAB)
    list(APPEND headers "${CMAKE_CURRENT_SOURCE_DIR}/${included}.cu")
  endforeach()

  list(GET ARG_LESSONS 0 main_lesson)
  set(programs ${ARG_LESSONS})
  if(ARG_LAB)
    list(APPEND programs ${ARG_LAB})
  endif()
  set(ptx_targets "")
  foreach(program IN LISTS programs)
    set(source "${CMAKE_CURRENT_SOURCE_DIR}/${program}.cu")
    if(NOT EXISTS "${source}")
      message(FATAL_ERROR "${chapter}: no program ${program}.cu")
    endif()
    if(program STREQUAL main_lesson)
      set(target ${chapter})
      set(test_name ${chapter})
    else()
      set(target ${chapter}_${program})
      set(test_name ${chapter}.${program})
    endif()
    if(program STREQUAL ARG_LAB)
      set(kind lab)
      set(defines COURSE_NO_MAIN)  # the lab includes its lesson, whose main must not come along
      set(results_where "section 'Lab'")
    elseif(program STREQUAL main_lesson)
      set(kind lesson)
      set(defines "")
      set(results_where "section 'Measured results'")
    else()
      set(kind lesson)
      set(defines "")
      set(results_where "the results of ${program}")
    endif()
    # Where a program that skips points the student: the recorded results on the page (core or
    # reference) that holds its results table.
    if(program STREQUAL main_lesson)
      set(results_marker "<!-- results:begin -->")
    else()
      set(results_marker "<!-- results:begin ${program} -->")
    endif()
    set(results_page "README.md")
    if(EXISTS "${CMAKE_CURRENT_SOURCE_DIR}/REFERENCE.md")
      file(READ "${CMAKE_CURRENT_SOURCE_DIR}/README.md" core_text)
      string(FIND "${core_text}" "${results_marker}" on_core)
      if(on_core LESS 0)
        file(READ "${CMAKE_CURRENT_SOURCE_DIR}/REFERENCE.md" reference_text)
        string(FIND "${reference_text}" "${results_marker}" on_reference)
        if(on_reference GREATER_EQUAL 0)
          set(results_page "REFERENCE.md")
          set(results_where "the results table of ${program}")
        endif()
      endif()
    endif()
    list(APPEND defines "COURSE_RESULTS_PAGE=\"${chapter}/${results_page}\""
                        "COURSE_RESULTS_WHERE=\"${results_where}\"")
    add_executable(${target} "${source}")
    set_target_properties(${target} PROPERTIES OUTPUT_NAME ${program} CUDA_ARCHITECTURES "${archs}")
    target_compile_definitions(${target} PRIVATE ${defines})
    target_include_directories(${target} PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}")
    target_link_libraries(${target} PRIVATE course::host ${ARG_LIBRARIES})
    file(APPEND "${COURSE_PROGRAMS_MANIFEST}"
         "${chapter} ${kind} ${program} ${target} ${CMAKE_CURRENT_BINARY_DIR}/${program}\n")

    # Verify-only: the chapters workflow runs the lessons in order; the labs run with the tests.
    add_test(NAME ${test_name} COMMAND ${target})
    if(kind STREQUAL "lab")
      set(labels "lab;gpu;${chapter}")
    else()
      set(labels "chapter;gpu;${chapter}")
      set_property(GLOBAL APPEND PROPERTY COURSE_LESSON_TARGETS ${target})
      add_test(NAME lesson_limits.${test_name} COMMAND "${CMAKE_COMMAND}" -DLESSON=${source}
               -P "${PROJECT_SOURCE_DIR}/cmake/CourseLessonLimits.cmake")
      set_tests_properties(lesson_limits.${test_name} PROPERTIES LABELS "host;${chapter}" TIMEOUT 60)
    endif()
    set_tests_properties(${test_name} PROPERTIES
      LABELS "${labels}" SKIP_RETURN_CODE ${COURSE_SKIP_RETURN_CODE} TIMEOUT ${COURSE_TEST_TIMEOUT})

    # PTX, generated at build time on any machine: for the chapter's minimum architecture and
    # each of PTX_ARCHS (library code can take another path per architecture).
    set(ptx_files "")
    foreach(arch IN LISTS ARG_MIN_ARCH ARG_PTX_ARCHS)
      set(file "${CMAKE_CURRENT_BINARY_DIR}/${program}.compute_${arch}.ptx")
      add_custom_command(OUTPUT "${file}"
        COMMAND "${CMAKE_CUDA_COMPILER}" -std=c++17 -ptx -arch=compute_${arch} -DCOURSE_NO_MAIN -DCOURSE_NO_LAB_MAIN
                -I "${PROJECT_SOURCE_DIR}/common" -I "${CMAKE_CURRENT_SOURCE_DIR}" "${source}" -o "${file}"
        DEPENDS "${source}" ${headers}
        COMMENT "PTX of ${chapter}/${program}.cu for compute_${arch}"
        VERBATIM)
      list(APPEND ptx_files "${file}")
    endforeach()
    add_custom_target(${target}_ptx DEPENDS ${ptx_files})
    list(APPEND ptx_targets ${target}_ptx)
  endforeach()

  # Every <stem>_test.cu is a GoogleTest suite; the naming rule of its suites is checked here.
  file(GLOB test_sources CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/*_test.cu")
  if(NOT test_sources)
    message(FATAL_ERROR "${chapter}: no *_test.cu: every chapter has a GoogleTest suite")
  endif()
  foreach(test_source IN LISTS test_sources)
    get_filename_component(stem "${test_source}" NAME_WE)
    course_check_suite_names("${test_source}")
    set(test_target ${chapter}_${stem})
    add_executable(${test_target} "${test_source}")
    set_target_properties(${test_target} PROPERTIES OUTPUT_NAME ${stem} CUDA_ARCHITECTURES "${archs}")
    target_compile_definitions(${test_target} PRIVATE COURSE_NO_MAIN COURSE_NO_LAB_MAIN
      COURSE_PTX_DIR="${CMAKE_CURRENT_BINARY_DIR}" COURSE_CUOBJDUMP="${CUDAToolkit_BIN_DIR}/cuobjdump")
    target_include_directories(${test_target} PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}")
    target_link_libraries(${test_target} PRIVATE course::host ${ARG_LIBRARIES})
    add_dependencies(${test_target} ${ptx_targets})
    course_add_gtest(${test_target} LABELS ${chapter})
    file(APPEND "${COURSE_PROGRAMS_MANIFEST}"
         "${chapter} test ${stem} ${test_target} ${CMAKE_CURRENT_BINARY_DIR}/${stem}\n")
  endforeach()

  # The graded exercises (exercises/), only in a build configured with COURSE_EXERCISES=ON.
  if(COURSE_EXERCISES AND IS_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}/exercises")
    course_add_exercises(${chapter} "${archs}" "${ARG_LIBRARIES}")
  endif()
endfunction()

# After every chapter: the target that builds the lessons alone (the chapters workflow builds only
# what it runs), and the summary CTest prints after every run in the build folder
# (cmake/CourseRunSummary.cmake, through CTEST_CUSTOM_POST_TEST in CTestCustom.cmake).
function(course_add_summary)
  get_property(lesson_targets GLOBAL PROPERTY COURSE_LESSON_TARGETS)
  add_custom_target(lessons DEPENDS ${lesson_targets})
  file(WRITE "${CMAKE_BINARY_DIR}/CTestCustom.cmake"
       "set(CTEST_CUSTOM_POST_TEST \"\\\"${CMAKE_COMMAND}\\\" -DJUNIT=${CMAKE_BINARY_DIR}/Testing/course_run.xml "
       "-P \\\"${PROJECT_SOURCE_DIR}/cmake/CourseRunSummary.cmake\\\"\")\n")
endfunction()
