#include "slurm_query.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace vgpuctl {

std::optional<std::string> run(const std::string& command, std::string& why) {
  FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr) {
    why = fmt::format("`{}` could not be started", command);
    return std::nullopt;
  }
  std::string out;
  std::array<char, 65536> buf{};
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int status = ::pclose(p);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    why = fmt::format("`{}` failed (exit status {})", command, status == -1 ? -1 : WEXITSTATUS(status));
    return std::nullopt;
  }
  return out;
}

std::optional<std::string> read_file(const std::string& path, std::string& why) {
  std::ifstream in(path);
  if (!in) {
    why = fmt::format("{}: cannot open", path);
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace vgpuctl
