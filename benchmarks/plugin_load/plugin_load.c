/* What it costs a Slurm daemon to load gres_vgpu.so, measured the way slurmstepd pays it: a process
 * that already holds libslurmfull dlopen()s the plugin. Each load runs in a fresh fork of this
 * process (a plugin cannot be unloaded cleanly, and every job step's slurmstepd loads it anew), and
 * the child's CPU time (user + system, from wait4) and the load's wall time are summed per plugin.
 * Loading an empty plugin the same way gives the cost of the fork itself, which the script
 * (benchmarks/plugin_load.sh) subtracts. Plugins are taken in turn, so drift hits them alike.
 *   vgpu-bench-plugin-load --libslurmfull PATH --loads N PLUGIN.so...
 * prints per plugin: "PATH cpu_ms_per_load X wall_ms_per_load Y". */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double ms_since(const struct timespec* start) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - start->tv_sec) * 1e3 + (double)(now.tv_nsec - start->tv_nsec) / 1e6;
}

static double cpu_ms(const struct rusage* ru) {
  return (double)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1e3 +
         (double)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1e3;
}

/* One load in a child; returns 0 and adds its costs, or -1 with the reason printed. */
static int load_once(const char* plugin, double* cpu, double* wall) {
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  pid_t pid = fork();
  if (pid < 0) {
    perror("plugin_load: fork");
    return -1;
  }
  if (pid == 0) {
    /* RTLD_LOCAL as Slurm's plugin loader (src/common/plugin.c) opens plugins. */
    if (!dlopen(plugin, RTLD_NOW | RTLD_LOCAL)) {
      fprintf(stderr, "plugin_load: %s\n", dlerror());
      _exit(1);
    }
    _exit(0);
  }
  int status = 0;
  struct rusage ru;
  if (wait4(pid, &status, 0, &ru) != pid) {
    perror("plugin_load: wait4");
    return -1;
  }
  *wall += ms_since(&start);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "plugin_load: loading %s failed (status %d)\n", plugin, status);
    return -1;
  }
  *cpu += cpu_ms(&ru);
  return 0;
}

int main(int argc, char** argv) {
  const char* libslurmfull = NULL;
  long loads = 0;
  int first = 1;
  while (first + 1 < argc && strncmp(argv[first], "--", 2) == 0) {
    if (strcmp(argv[first], "--libslurmfull") == 0) libslurmfull = argv[first + 1];
    else if (strcmp(argv[first], "--loads") == 0)
      loads = strtol(argv[first + 1], NULL, 10);
    else
      break;
    first += 2;
  }
  if (!libslurmfull || loads <= 0 || first >= argc) {
    fprintf(stderr, "usage: %s --libslurmfull PATH --loads N PLUGIN.so...\n", argv[0]);
    return 2;
  }
  /* What slurmstepd has before it loads a plugin: libslurmfull, its symbols global. */
  if (!dlopen(libslurmfull, RTLD_NOW | RTLD_GLOBAL)) {
    fprintf(stderr, "plugin_load: %s\n", dlerror());
    return 2;
  }
  int plugins = argc - first;
  double *cpu = calloc((size_t)plugins, sizeof *cpu), *wall = calloc((size_t)plugins, sizeof *wall);
  if (!cpu || !wall) return 2;
  for (long i = 0; i < loads; i++)
    for (int p = 0; p < plugins; p++)
      if (load_once(argv[first + p], &cpu[p], &wall[p]) != 0) return 1;
  for (int p = 0; p < plugins; p++)
    printf("%s cpu_ms_per_load %.4f wall_ms_per_load %.4f\n", argv[first + p], cpu[p] / (double)loads,
           wall[p] / (double)loads);
  free(cpu);
  free(wall);
  return 0;
}
