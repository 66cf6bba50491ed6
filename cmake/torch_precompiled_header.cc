// The one source of the targets that build the precompiled LibTorch header
// (cmake/torch_precompiled_header.cmake); it needs no code of its own.
