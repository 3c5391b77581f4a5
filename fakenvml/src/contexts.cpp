#include "contexts.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace fakenvml {
namespace {

bool runs(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

// "<gpu uuid> <gi or -> <gi serial>"
std::string render(const ContextScope& s) {
  std::ostringstream out;
  out << s.gpu_uuid << ' ' << (s.gi ? std::to_string(*s.gi) : "-") << ' ' << s.gi_serial << '\n';
  return out.str();
}

std::optional<ContextScope> parse(const std::string& text) {
  std::istringstream in(text);
  ContextScope s;
  std::string gi;
  if (!(in >> s.gpu_uuid >> gi >> s.gi_serial)) return std::nullopt;
  if (gi != "-") {
    char* end = nullptr;
    s.gi = static_cast<unsigned>(std::strtoul(gi.c_str(), &end, 10));
    if (*end != '\0') return std::nullopt;
  }
  return s;
}

}  // namespace

std::string contexts_dir_for(const std::string& state_path) {
  if (state_path.empty()) return {};
  const auto slash = state_path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : state_path.substr(0, slash + 1);
  return dir + "." + state_path.substr(slash == std::string::npos ? 0 : slash + 1) + ".contexts";
}

bool Contexts::prepare(std::string& error) const {
  if (dir_.empty()) return true;
  if (::mkdir(dir_.c_str(), 01777) == 0) ::chmod(dir_.c_str(), 01777);  // whatever the umask
  else if (errno != EEXIST) {
    error = "mkdir " + dir_ + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

bool Contexts::open(pid_t pid, const ContextScope& scope, std::string& error) {
  if (dir_.empty()) {
    std::erase_if(memory_, [&](const Context& c) { return c.pid == pid; });
    memory_.push_back({pid, scope});
    return true;
  }
  if (!prepare(error)) return false;
  const std::string path = dir_ + "/" + std::to_string(pid);
  ::unlink(path.c_str());  // an earlier process's with the same pid, if its owner let it be
  std::ofstream out(path, std::ios::trunc);
  out << render(scope);
  if (!out.flush()) {
    error = "write " + path + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

std::vector<Context> Contexts::live() const {
  std::vector<Context> out;
  if (dir_.empty()) {
    for (const auto& c : memory_)
      if (runs(c.pid)) out.push_back(c);
    return out;
  }
  DIR* d = ::opendir(dir_.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0' || !runs(static_cast<pid_t>(pid))) continue;
    std::ifstream in(dir_ + "/" + e->d_name);
    std::stringstream text;
    text << in.rdbuf();
    if (auto scope = parse(text.str())) out.push_back({static_cast<pid_t>(pid), *scope});
  }
  ::closedir(d);
  return out;
}

bool Contexts::held(const ContextScope& scope) const {
  for (const auto& c : live())
    if (c.scope == scope) return true;
  return false;
}

}  // namespace fakenvml
