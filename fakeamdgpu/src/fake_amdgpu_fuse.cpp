// vgpu-fake-amdgpu: the fake amdgpu driver as a filesystem, so that every process of a test node
// (planner, prolog, epilog, vgpuctl) reads and writes AMD partition attributes with ordinary file
// I/O and gets the kernel's errno, exactly as on /sys. The daemon is the "kernel": its state lives
// in memory and a restart is a reboot (the mode returns to the fixture's).
//
//   vgpu-fake-amdgpu --fixture F.json --mount DIR --dev-root DIR
//
// DIR/sys/... is the sysfs tree; DEV-ROOT/dev/kfd and DEV-ROOT/dev/dri/renderD<N> are created as
// plain files (the render nodes the product hands to jobs, and whose open descriptors make a GPU
// busy). Runs in the foreground until SIGTERM/SIGINT, then unmounts.
#define FUSE_USE_VERSION 31
#include <fuse3/fuse.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "fake_amdgpu_driver.h"
#include "render_node_users.h"

namespace {

using vgpu::fake::FakeAmdgpuDriver;
using Kind = FakeAmdgpuDriver::Kind;

FakeAmdgpuDriver& driver() { return *static_cast<FakeAmdgpuDriver*>(fuse_get_context()->private_data); }

std::string rel(const char* path) { return path[0] == '/' ? std::string(path + 1) : std::string(path); }

void* on_init(fuse_conn_info* /*conn*/, fuse_config* cfg) {
  // Attributes change under the reader (a mode switch adds KFD nodes): never cache.
  cfg->entry_timeout = 0;
  cfg->attr_timeout = 0;
  cfg->negative_timeout = 0;
  cfg->direct_io = 1;
  return fuse_get_context()->private_data;
}

int on_getattr(const char* path, struct stat* st, fuse_file_info* /*fi*/) {
  std::memset(st, 0, sizeof *st);
  auto e = driver().stat(rel(path));
  switch (e.kind) {
    case Kind::missing: return -ENOENT;
    case Kind::dir:
      st->st_mode = S_IFDIR | 0755;
      st->st_nlink = 2;
      return 0;
    case Kind::link:
      st->st_mode = S_IFLNK | 0777;
      st->st_nlink = 1;
      st->st_size = static_cast<off_t>(e.content.size());
      return 0;
    case Kind::file:
      st->st_mode = S_IFREG | (e.writable ? 0644 : 0444);
      st->st_nlink = 1;
      st->st_size = 4096;  // like sysfs: the size says nothing about the content
      return 0;
  }
  return -EIO;
}

int on_readlink(const char* path, char* buf, size_t size) {
  auto e = driver().stat(rel(path));
  if (e.kind != Kind::link) return -EINVAL;
  std::snprintf(buf, size, "%s", e.content.c_str());
  return 0;
}

int on_readdir(const char* path, void* buf, fuse_fill_dir_t fill, off_t /*off*/, fuse_file_info* /*fi*/,
               fuse_readdir_flags /*flags*/) {
  if (driver().stat(rel(path)).kind != Kind::dir) return -ENOENT;
  fill(buf, ".", nullptr, 0, static_cast<fuse_fill_dir_flags>(0));
  fill(buf, "..", nullptr, 0, static_cast<fuse_fill_dir_flags>(0));
  for (const auto& name : driver().list(rel(path)))
    fill(buf, name.c_str(), nullptr, 0, static_cast<fuse_fill_dir_flags>(0));
  return 0;
}

int on_open(const char* path, fuse_file_info* fi) {
  auto e = driver().stat(rel(path));
  if (e.kind != Kind::file) return -ENOENT;
  if ((fi->flags & O_ACCMODE) != O_RDONLY && !e.writable) return -EACCES;
  fi->direct_io = 1;
  return 0;
}

int on_read(const char* path, char* buf, size_t size, off_t off, fuse_file_info* /*fi*/) {
  auto e = driver().stat(rel(path));
  if (e.kind != Kind::file) return -ENOENT;
  if (off >= static_cast<off_t>(e.content.size())) return 0;
  size_t n = std::min(size, e.content.size() - static_cast<size_t>(off));
  std::memcpy(buf, e.content.data() + off, n);
  return static_cast<int>(n);
}

int on_write(const char* path, const char* buf, size_t size, off_t /*off*/, fuse_file_info* /*fi*/) {
  auto r = driver().write(rel(path), std::string_view(buf, size));
  return r ? static_cast<int>(size) : -r.error();
}

// A shell's `echo X > attr` opens with O_TRUNC: sysfs ignores it, and so does the fake.
int on_truncate(const char* path, off_t /*size*/, fuse_file_info* /*fi*/) {
  return driver().stat(rel(path)).kind == Kind::file ? 0 : -ENOENT;
}

int usage(const char* why) {
  std::fprintf(stderr, "vgpu-fake-amdgpu: %s\nusage: vgpu-fake-amdgpu --fixture F.json --mount DIR --dev-root DIR\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string fixture_path, mount, dev_root;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--fixture") fixture_path = argv[i + 1];
    else if (flag == "--mount")
      mount = argv[i + 1];
    else if (flag == "--dev-root")
      dev_root = argv[i + 1];
    else
      return usage(("unknown option " + flag).c_str());
  }
  if (argc % 2 == 0 || fixture_path.empty() || mount.empty() || dev_root.empty()) return usage("missing an option");
  auto fixture = vgpu::fake::load_fake_amdgpu_fixture(fixture_path);
  if (!fixture) {
    std::fprintf(stderr, "vgpu-fake-amdgpu: %s\n", fixture.error().message.c_str());
    return 1;
  }
  auto drv = std::make_unique<FakeAmdgpuDriver>(std::move(*fixture), [dev_root](const std::vector<int>& minors) {
    return vgpu::fake::render_nodes_in_use(dev_root, minors);
  });
  // The device files: /dev/kfd is shared by every GPU; one render node per possible partition.
  std::error_code ec;
  std::filesystem::create_directories(dev_root + "/dev/dri", ec);
  auto touch = [](const std::string& p) {
    if (!std::filesystem::exists(p)) std::ofstream(p).flush();
    ::chmod(p.c_str(), 0666);
  };
  touch(dev_root + "/dev/kfd");
  for (std::size_t g = 0; g < drv->gpu_count(); ++g)
    for (int minor : drv->render_minors(g)) touch(dev_root + "/dev/dri/renderD" + std::to_string(minor));

  fuse_operations ops{};
  ops.init = on_init;
  ops.getattr = on_getattr;
  ops.readlink = on_readlink;
  ops.readdir = on_readdir;
  ops.open = on_open;
  ops.read = on_read;
  ops.write = on_write;
  ops.truncate = on_truncate;
  std::vector<const char*> fuse_argv = {argv[0], mount.c_str(), "-f", "-o", "fsname=fake-amdgpu,auto_unmount"};
  return fuse_main(static_cast<int>(fuse_argv.size()), const_cast<char**>(fuse_argv.data()), &ops, drv.get());
}
