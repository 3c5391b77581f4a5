// vgpu-bench-hook-runner: slurmd's Prolog or Epilog in benchmarks/slurm_overhead.sh. It loads the
// node's environment, runs the product's hook and records the hook's wall and CPU time, as the
// e2e library's bash wrapper does, but without a shell: that wrapper cost about 2 ms of CPU per
// hook (bash's start, the sourced file, the subshell of `time`), which the count-only side, with
// /bin/true as its hooks, never pays. What this runner costs is not the product's either; it is
// well under a millisecond (docs/benchmarks.md).
//
// slurmd runs the Prolog with no arguments, so the runner is copied once per hook and reads
// "<its own path>.conf", strict lines of key=value:
//   kind=prolog                       the first word of each line in the times file
//   program=/path/to/vgpu-prolog      run with the node's environment added to slurmd's
//   env_dir=/path                     <env_dir>/<SLURMD_NODENAME>.sh: lines "export NAME=VALUE"
//   log_dir=/path                     the hook's output goes to <log_dir>/<kind>.<node>.log
//   times=/path/hook-times.txt        "<kind> <job> <wall s> <user s> <system s>" appended per run
// Like the wrapper it replaces, it exits 0 whatever happens: a failing Prolog drains the node, and
// the benchmark counts what went wrong from the product's own log and the jobs' outcomes.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kLine = 4096 };

struct config {
  char kind[64], program[kLine], env_dir[kLine], log_dir[kLine], times[kLine];
};

static void complain(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("vgpu-bench-hook-runner: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static int set_field(char* dst, size_t size, const char* value) {
  if (strlen(value) >= size) return -1;
  strcpy(dst, value);
  return 0;
}

// Known keys only, and all of them: a typo in the benchmark's setup must not run a half-configured hook.
static int read_config(const char* path, struct config* c) {
  FILE* f = fopen(path, "r");
  if (!f) {
    complain("%s: %s", path, strerror(errno));
    return -1;
  }
  memset(c, 0, sizeof *c);
  char line[kLine + 64];
  int ok = 0, lineno = 0;
  while (ok == 0 && fgets(line, sizeof line, f)) {
    ++lineno;
    line[strcspn(line, "\n")] = '\0';
    char* eq = strchr(line, '=');
    if (!eq) {
      complain("%s:%d: expected key=value, got '%s'", path, lineno, line);
      ok = -1;
      break;
    }
    *eq = '\0';
    const char* v = eq + 1;
    if (strcmp(line, "kind") == 0) ok = set_field(c->kind, sizeof c->kind, v);
    else if (strcmp(line, "program") == 0)
      ok = set_field(c->program, sizeof c->program, v);
    else if (strcmp(line, "env_dir") == 0)
      ok = set_field(c->env_dir, sizeof c->env_dir, v);
    else if (strcmp(line, "log_dir") == 0)
      ok = set_field(c->log_dir, sizeof c->log_dir, v);
    else if (strcmp(line, "times") == 0)
      ok = set_field(c->times, sizeof c->times, v);
    else {
      complain("%s:%d: unknown key '%s'", path, lineno, line);
      ok = -1;
    }
  }
  fclose(f);
  if (ok == 0 && (!*c->kind || !*c->program || !*c->env_dir || !*c->log_dir || !*c->times)) {
    complain("%s: needs kind, program, env_dir, log_dir and times", path);
    ok = -1;
  }
  return ok;
}

// The node's environment as the e2e library writes it: only "export NAME=VALUE" lines, values
// unquoted (lib.sh's _vp_node_env_write); anything else is refused rather than half-understood.
static int load_node_env(const char* path) {
  FILE* f = fopen(path, "r");
  if (!f) {
    complain("%s: %s", path, strerror(errno));
    return -1;
  }
  char line[kLine + 64];
  int ok = 0, lineno = 0;
  while (ok == 0 && fgets(line, sizeof line, f)) {
    ++lineno;
    line[strcspn(line, "\n")] = '\0';
    if (*line == '\0') continue;
    const char* prefix = "export ";
    char* eq = strchr(line, '=');
    if (strncmp(line, prefix, strlen(prefix)) != 0 || !eq || strpbrk(line, "\"'$`;&|")) {
      complain("%s:%d: only 'export NAME=VALUE' lines are understood here, got '%s'", path, lineno, line);
      ok = -1;
      break;
    }
    *eq = '\0';
    if (setenv(line + strlen(prefix), eq + 1, 1) != 0) ok = -1;
  }
  fclose(f);
  return ok;
}

static double seconds(const struct timeval* t) { return (double)t->tv_sec + (double)t->tv_usec / 1e6; }

int main(void) {
  char conf_path[kLine], self[kLine];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 0;
  self[n] = '\0';
  // Each hook is its own copy of this program (not a link, which /proc/self/exe would resolve).
  if (snprintf(conf_path, sizeof conf_path, "%s.conf", self) >= (int)sizeof conf_path) return 0;
  struct config c;
  if (read_config(conf_path, &c) != 0) return 0;
  const char* node = getenv("SLURMD_NODENAME");
  const char* job = getenv("SLURM_JOB_ID");
  if (!node || !*node || strchr(node, '/')) {
    complain("SLURMD_NODENAME missing or not a plain name");
    return 0;
  }
  char path[kLine + 256];
  snprintf(path, sizeof path, "%s/%s.sh", c.env_dir, node);
  if (load_node_env(path) != 0) return 0;
  snprintf(path, sizeof path, "%s/%s.%s.log", c.log_dir, c.kind, node);
  int log = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  pid_t child = fork();
  if (child == 0) {
    if (log >= 0) {
      dup2(log, STDOUT_FILENO);
      dup2(log, STDERR_FILENO);
    }
    char* child_argv[] = {c.program, NULL};
    execv(c.program, child_argv);
    complain("%s: %s", c.program, strerror(errno));
    _exit(127);
  }
  if (child < 0) {
    complain("fork: %s", strerror(errno));
    return 0;
  }
  int status = 0;
  struct rusage usage;
  memset(&usage, 0, sizeof usage);
  while (wait4(child, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  clock_gettime(CLOCK_MONOTONIC, &end);
  const double wall = (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9;
  char record[256];
  int len = snprintf(record, sizeof record, "%s %s %.3f %.3f %.3f\n", c.kind, job ? job : "?", wall,
                     seconds(&usage.ru_utime), seconds(&usage.ru_stime));
  // One write with O_APPEND: concurrent hooks of several nodes never interleave inside a line.
  int times = open(c.times, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (times >= 0 && len > 0 && len < (int)sizeof record) {
    if (write(times, record, (size_t)len) != len) complain("%s: short write", c.times);
  }
  if (times >= 0) close(times);
  if (log >= 0) close(log);
  return 0;
}
