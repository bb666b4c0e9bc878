// Precompiled header: LibTorch and the two header-heavy libraries every
// translation unit of ladder uses. Keep project headers out of it.
#pragma once
#include <torch/torch.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
