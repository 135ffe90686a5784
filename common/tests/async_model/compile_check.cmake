# cmake -DCOMPILER=<nvcc> [-DHOST_COMPILER=<c++>] -DSOURCE=<file.cu> -DOBJECT=<file.o> -DARCH=<sm_NN>
#       -DCOPY_API=<1|2|3> -DNON_TRIVIAL=<ON|OFF> -DEXPECT=<compiles|rejected> [-DDIAGNOSTIC=<regex>]
#       -P compile_check.cmake
#
# Compiles one memcpy_async call (memcpy_async_element.cu) and judges the outcome: EXPECT=compiles
# passes when the compiler accepts the file; EXPECT=rejected passes only when the compiler refuses
# it with a message matching DIAGNOSTIC, so a file that compiles, or fails for another reason,
# fails the test. Either way one line says what happened.
cmake_minimum_required(VERSION 3.25)
foreach(required COMPILER SOURCE OBJECT ARCH COPY_API EXPECT)
  if(NOT DEFINED ${required})
    message(FATAL_ERROR "compile_check.cmake: -D${required}=... is missing")
  endif()
endforeach()

set(command "${COMPILER}" -std=c++17 "-arch=${ARCH}" -c "${SOURCE}" -o "${OBJECT}" "-DCOPY_API=${COPY_API}")
if(HOST_COMPILER)
  list(APPEND command -ccbin "${HOST_COMPILER}")
endif()
if(NON_TRIVIAL)
  list(APPEND command -DELEMENT_HAS_COPY_CONSTRUCTOR)
  set(element "an element type with a copy constructor (not trivially copyable)")
else()
  set(element "a trivially copyable element type")
endif()
set(apis "cuda::memcpy_async on a cuda::barrier" "cuda::memcpy_async on a cuda::pipeline"
         "cooperative_groups::memcpy_async")
math(EXPR api_index "${COPY_API} - 1")
list(GET apis ${api_index} api)

execute_process(COMMAND ${command} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE out)
file(REMOVE "${OBJECT}")
# The compiler's first error line, with the path of the toolkit or the checkout left out.
string(REGEX MATCH "[^\n]*error[^\n]*" first_error "${out}")
string(REGEX REPLACE "^.*/(cuda/|common/)" "\\1" first_error "${first_error}")

if(EXPECT STREQUAL "compiles")
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${api} with ${element} should compile; the compiler refused it: ${first_error}")
  endif()
  message("${api} with ${element}: compiles")
elseif(EXPECT STREQUAL "rejected")
  if(status EQUAL 0)
    message(FATAL_ERROR "${api} with ${element} compiled; it must be rejected (memcpy_async copies bytes, "
                        "which is only a copy of a trivially copyable type)")
  endif()
  if(NOT out MATCHES "${DIAGNOSTIC}")
    message(FATAL_ERROR "${api} with ${element} was refused, but not with the expected diagnostic "
                        "'${DIAGNOSTIC}': ${first_error}")
  endif()
  message("${api} with ${element}: rejected: ${first_error}")
else()
  message(FATAL_ERROR "compile_check.cmake: EXPECT must be compiles or rejected, not '${EXPECT}'")
endif()
