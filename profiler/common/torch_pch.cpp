// profiler/common/torch_pch.cpp: the translation unit that builds the
// precompiled LibTorch header (torch_pch.h) for every target to reuse
// (scripts/pch.cmake); it has no code of its own.
