// bench/environment.h: where a report was measured (host, OS, CPU, threads,
// device, library versions, compiler). Compare refuses or explains from this.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>
#include <torch/torch.h>

namespace ladder {

nlohmann::json describe_environment(const torch::Device& device);
std::string host_name();

}  // namespace ladder
