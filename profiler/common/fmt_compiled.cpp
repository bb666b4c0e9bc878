// profiler/common/fmt_compiled.cpp: fmt's compiled part, once for the whole
// build.
//
// The fmt headers every file of ladder sees are LibTorch's bundled copy (its
// include directory comes first, so it shadows any other), and that copy
// ships no library. Header-only mode (FMT_HEADER_ONLY) compiled fmt's
// formatting core into every translation unit that formats: 3.4 to 4.1 s more
// per file at -O3 on the 2-core VM (reports/render/documents/run_document.cpp 8.5 -> 5.1 s,
// compare.cpp 11.1 -> 7.2 s, 2026-11-29). Here it is compiled once: the
// non-template functions of format-inl.h, and the templates fmt's headers
// declare `extern template` (format.h) for the others to link against.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

template FMT_API auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<wchar_t>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API auto decimal_point_impl(locale_ref) -> wchar_t;

}  // namespace detail
FMT_END_NAMESPACE
