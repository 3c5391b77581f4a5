/* gres/vgpu: Slurm's GRES plugin ABI, and nothing else. Every decision lives in the C++ contract
 * code behind vgpu_gres_bridge.h; this file only moves data between Slurm's structures and that
 * interface, and logs through Slurm's logger. It never touches NVML or the GPU and reads at most one
 * small file per call, so it cannot stall slurmd.
 *
 * One source for every supported release. The differences are compile-time ranges on the version
 * of the Slurm tree it is built against (SLURM_VERSION_NUMBER from that tree's slurm_version.h), so
 * a release between two tested ones builds unchanged. Tested: 22.05.8 (Debian 12), 24.11.5 (Debian
 * 13, compile only), 25.11.7 (compile only), 26.05.3. Boundaries read from the sources of 22.05.8,
 * 23.11.4, 24.11.5, 25.11.7 and 26.05.3; the 23.02 and 24.05 edges follow Slurm's CHANGELOG and are
 * untested (docs/slurm.md, "Slurm releases"):
 *   >= 23.02  gres.h lives in src/interfaces/; gres_p_epilog_* became gres_p_prep_* (gres_prep_t)
 *   >= 23.11  list_t (List is gone by 24.11)
 *   <  24.11  gres_p_get_job_info/get_step_info are required symbols (dropped by 24.11; exporting
 *             them where they are not looked up is harmless, omitting them where they are makes
 *             slurmd fatal(), so the range errs on exporting)
 * Slurm loads the plugin only when plugin_version equals the daemon's major.minor.micro. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "slurm/slurm_version.h"

#include "src/common/slurm_xlator.h"
#include "src/common/bitstring.h"
#include "src/common/env.h"
#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 2, 0)
#include "src/interfaces/gres.h"
typedef gres_prep_t vgpu_prep_t;
#else
#include "src/common/gres.h"
typedef gres_epilog_info_t vgpu_prep_t;
#endif

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
typedef list_t* vgpu_list_t;
#else
typedef List vgpu_list_t;
#endif

#include "../bridge/vgpu_gres_bridge.h"

const char plugin_name[] = "Gres vGPU plugin (dynamic MIG, slurm-vgpu)";
const char plugin_type[] = "gres/vgpu";
/* Slurm compares major.minor.micro exactly; a mismatch makes the GRES silently count-only. */
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

#define VGPU_NAME "vgpu"
#define VGPU_FREE "free"
#define VGPU_ALLOC_MAX 4096

static const char* _daemon(void) {
  if (running_in_slurmctld()) return "slurmctld";
  if (running_in_slurmd()) return "slurmd";
  if (running_in_slurmstepd()) return "slurmstepd";
  return "client";
}

extern int init(void) {
  debug("gres/vgpu: loaded in %s (plugin_version 0x%x)", _daemon(), plugin_version);
  return SLURM_SUCCESS;
}

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
static void _stop_following(void);
#endif

/* int, as Slurm declared it until 25.05; the loader calls it as void (*)(void) in every release. */
extern int fini(void) {
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
  _stop_following();
#endif
  return SLURM_SUCCESS;
}

/* ---- node_config_load: report the advertised split, padded to the configured total ---- */

static bool _is_vgpu(gres_slurmd_conf_t* rec) { return rec->name && !strcmp(rec->name, VGPU_NAME); }

static int _sum_total(void* x, void* arg) {
  gres_slurmd_conf_t* rec = x;
  if (_is_vgpu(rec)) *(uint64_t*)arg += rec->count;
  return 0;
}

static int _zero_count(void* x, void* arg) {
  gres_slurmd_conf_t* rec = x;
  (void)arg;
  if (_is_vgpu(rec)) rec->count = 0;
  return 0;
}

static int _find_type(void* x, void* key) {
  gres_slurmd_conf_t* rec = x;
  return _is_vgpu(rec) && rec->type_name && !strcmp(rec->type_name, key);
}

/* A new record shaped like `tmpl` (the slurm.conf "free" record). add_gres_to_list() is not used:
 * it overwrites the list's first record whenever that one has count 0, which is exactly the state
 * this plugin creates while it rewrites the split. */
static gres_slurmd_conf_t* _clone_record(gres_slurmd_conf_t* tmpl, const char* type, uint64_t count) {
  gres_slurmd_conf_t* rec = xmalloc(sizeof(*rec));

  rec->config_flags = tmpl->config_flags | GRES_CONF_HAS_TYPE;
  rec->count = count;
  rec->cpu_cnt = tmpl->cpu_cnt;
  rec->cpus = xstrdup(tmpl->cpus);
  if (tmpl->cpus_bitmap) rec->cpus_bitmap = bit_copy(tmpl->cpus_bitmap);
  rec->name = xstrdup(tmpl->name);
  rec->type_name = xstrdup(type);
  rec->plugin_id = tmpl->plugin_id;
  return rec;
}

static gres_slurmd_conf_t* _find_or_add(vgpu_list_t list, gres_slurmd_conf_t* tmpl, const char* type) {
  gres_slurmd_conf_t* rec = list_find_first(list, _find_type, (void*)type);
  if (!rec) {
    rec = _clone_record(tmpl, type, 0);
    list_append(list, rec);
  }
  return rec;
}

static int _first_vgpu(void* x, void* key) {
  (void)key;
  return _is_vgpu(x);
}

/* Sets the vgpu records to the split in `rep` (each type it lists, and the free padding).
 * `phased`: slurmd packs these records into a registration at any moment, without a lock this
 * plugin could share. Raising counts first and lowering them `_PHASE_GAP_NS` later means a pack
 * never sees a total below the configured one (slurmctld drains a node for that); at worst it
 * sees more (slurmctld ignores the excess). The stores are atomic so no count is read torn. */
#define _PHASE_GAP_NS 250000000L
static void _apply_split(vgpu_list_t list, gres_slurmd_conf_t* tmpl, const vgpu_reported_t* rep, bool phased) {
  gres_slurmd_conf_t* recs[VGPU_GRES_MAX_TYPES + 1];
  uint64_t want[VGPU_GRES_MAX_TYPES + 1];
  int n = 0, lowered = 0;

  for (int i = 0; i < rep->advertised_cnt; i++) {
    recs[n] = _find_or_add(list, tmpl, rep->advertised[i].type);
    want[n++] = rep->advertised[i].count;
  }
  recs[n] = _find_or_add(list, tmpl, VGPU_FREE);
  want[n++] = rep->free_cnt;
  for (int i = 0; i < n; i++) {
    if (want[i] >= __atomic_load_n(&recs[i]->count, __ATOMIC_SEQ_CST))
      __atomic_store_n(&recs[i]->count, want[i], __ATOMIC_SEQ_CST);
    else
      lowered++;
  }
  if (!lowered) return;
  if (phased) {
    struct timespec gap = {.tv_sec = 0, .tv_nsec = _PHASE_GAP_NS};
    while (nanosleep(&gap, &gap) != 0 && errno == EINTR)
      ;
  }
  for (int i = 0; i < n; i++) __atomic_store_n(&recs[i]->count, want[i], __ATOMIC_SEQ_CST);
}

static void _log_split(const vgpu_reported_t* rep, uint64_t total, const char* when) {
  char* summary = NULL;
  int zero_types = 0;

  for (int i = 0; i < rep->advertised_cnt; i++) {
    if (!rep->advertised[i].count) zero_types++;
    else
      xstrfmtcat(summary, "%s%s:%" PRIu64, summary ? "," : "", rep->advertised[i].type, rep->advertised[i].count);
  }
  xstrfmtcat(summary, "%s" VGPU_FREE ":%" PRIu64, summary ? "," : "", rep->free_cnt);
  if (rep->used_advertisement)
    info("gres/vgpu: node %s %s %s (total %" PRIu64 ", %d other types at 0; %s)", rep->node, when, summary, total,
         zero_types, rep->message);
  else
    error("gres/vgpu: node %s: advertisement not used, nothing placeable (all %" PRIu64 " free): %s",
          rep->node[0] ? rep->node : "?", total, rep->message);
  xfree(summary);
}

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
/* From 23.11 slurmctld takes a node's split from `scontrol update` (the planner's handover), yet
 * still applies slurmd's registration report at its own restart and whenever the node has a
 * zero-count type, and deletes what the report lacks, allocations of running jobs included
 * (docs/slurm.md). So while slurmd runs, this thread keeps its report equal to advertisement.json
 * and records in slurmd-report.json what it now reports; the planner hands a split to slurmctld
 * only once slurmd reports it. (Before 23.11 the planner SIGHUPs slurmd, which re-reads the file
 * in node_config_load.) It never takes a Slurm lock and never blocks slurmd. */
static struct {
  pthread_t thread;
  bool running;
  int stop_pipe[2];
  vgpu_list_t list;
  gres_slurmd_conf_t* tmpl;
  uint64_t total;
  char path[4096];
} _follow = {.stop_pipe = {-1, -1}};

static void _write_report(const vgpu_reported_t* rep) {
  char message[512];

  if (vgpu_gres_write_slurmd_report(rep, message, sizeof(message)) < 0)
    error("gres/vgpu: node %s: %s", rep->node, message);
}

static bool _changed(const struct stat* a, const struct stat* b) {
  return a->st_ino != b->st_ino || a->st_size != b->st_size || a->st_mtim.tv_sec != b->st_mtim.tv_sec ||
         a->st_mtim.tv_nsec != b->st_mtim.tv_nsec;
}

static int _watch(int ifd) {
  char dir[sizeof(_follow.path)];
  char* slash;

  snprintf(dir, sizeof(dir), "%s", _follow.path);
  if (!(slash = strrchr(dir, '/'))) return -1;
  *slash = '\0';
  return inotify_add_watch(ifd, dir, IN_MOVED_TO | IN_CLOSE_WRITE | IN_CREATE);
}

static void* _follow_advertisement(void* arg) {
  struct stat seen = {0}, now;
  int ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  bool watching = false;
  vgpu_reported_t* rep = xmalloc(sizeof(*rep));
  char drain[4096];

  (void)arg;
  (void)stat(_follow.path, &seen);
  for (;;) {
    struct pollfd fds[2] = {{.fd = _follow.stop_pipe[0], .events = POLLIN}, {.fd = ifd, .events = POLLIN}};

    if (ifd >= 0 && !watching) watching = _watch(ifd) >= 0; /* the node dir may not exist yet */
    if (poll(fds, watching ? 2 : 1, 1000) > 0 && (fds[0].revents & POLLIN)) break;
    if (watching && (fds[1].revents & POLLIN))
      while (read(ifd, drain, sizeof(drain)) > 0)
        ;
    if (stat(_follow.path, &now) != 0 || !_changed(&now, &seen)) continue;
    seen = now;
    vgpu_gres_reported_counts(_follow.total, rep);
    _apply_split(_follow.list, _follow.tmpl, rep, true);
    _log_split(rep, _follow.total, "now reports");
    _write_report(rep);
  }
  if (ifd >= 0) close(ifd);
  xfree(rep);
  return NULL;
}

static void _start_following(vgpu_list_t list, gres_slurmd_conf_t* tmpl, uint64_t total) {
  char message[512];

  if (_follow.running) return;
  if (vgpu_gres_advertisement_path(message, sizeof(message)) < 0) {
    error("gres/vgpu: not following advertisement.json: %s", message);
    return;
  }
  snprintf(_follow.path, sizeof(_follow.path), "%s", message);
  _follow.list = list;
  _follow.tmpl = tmpl;
  _follow.total = total;
  if (pipe(_follow.stop_pipe) != 0 || fcntl(_follow.stop_pipe[0], F_SETFD, FD_CLOEXEC) != 0 ||
      fcntl(_follow.stop_pipe[1], F_SETFD, FD_CLOEXEC) != 0) {
    error("gres/vgpu: not following advertisement.json: pipe: %m");
    return;
  }
  if (pthread_create(&_follow.thread, NULL, _follow_advertisement, NULL) != 0) {
    error("gres/vgpu: not following advertisement.json: pthread_create: %m");
    close(_follow.stop_pipe[0]);
    close(_follow.stop_pipe[1]);
    return;
  }
  _follow.running = true;
}

/* Called before Slurm frees the records the thread updates. */
static void _stop_following(void) {
  if (!_follow.running) return;
  (void)!write(_follow.stop_pipe[1], "x", 1);
  pthread_join(_follow.thread, NULL);
  close(_follow.stop_pipe[0]);
  close(_follow.stop_pipe[1]);
  _follow.running = false;
}
#endif

extern int gres_p_node_config_load(vgpu_list_t gres_conf_list, node_config_load_t* node_conf) {
  uint64_t total = 0;
  vgpu_reported_t* rep;
  gres_slurmd_conf_t* tmpl;

  /* slurmctld calls this only for cloud nodes; it has no state dir for them. */
  if (!node_conf || !node_conf->in_slurmd || !gres_conf_list) return SLURM_SUCCESS;

  list_for_each(gres_conf_list, _sum_total, &total);
  if (total == 0) return SLURM_SUCCESS;
  /* slurmd drops zero-count slurm.conf records, so "free" (count T) is normally the only one. */
  tmpl = list_find_first(gres_conf_list, _find_type, VGPU_FREE);
  if (!tmpl) tmpl = list_find_first(gres_conf_list, _first_vgpu, NULL);

  rep = xmalloc(sizeof(*rep));
  vgpu_gres_reported_counts(total, rep);
  list_for_each(gres_conf_list, _zero_count, NULL);
  _apply_split(gres_conf_list, tmpl, rep, false);
  _log_split(rep, total, "reports");
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
  _write_report(rep);
  _start_following(gres_conf_list, tmpl, total);
#endif
  xfree(rep);
  return SLURM_SUCCESS;
}

/* ---- job / step environment from jobs/<jobid>.json ---- */

static void _env_setter(void* ctx, const char* name, const char* value) {
  env_array_overwrite((char***)ctx, name, value);
}

/*
 * This process's title: slurmstepd sets "slurmstepd: [<job>.<step>]" over its argv before any GRES
 * plugin fills a step's environment, from slurmd's launch message. Empty when unreadable.
 */
static void _process_title(char* out, size_t out_len) {
  ssize_t n = 0;
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);

  out[0] = '\0';
  if (fd < 0) return;
  do {
    n = read(fd, out, out_len - 1);
  } while (n < 0 && errno == EINTR);
  close(fd);
  out[n > 0 ? n : 0] = '\0'; /* the first NUL ends the title */
}

static void _set_job_env(char*** env_ptr, uint64_t gres_cnt, const char* what) {
  char message[512];
  char title[256];
  int rc;

  if (!env_ptr || gres_cnt == 0) return;
  _process_title(title, sizeof(title));
  rc = vgpu_gres_job_env(title, getenvp(*env_ptr, "SLURM_JOB_ID"), _env_setter, env_ptr, message, sizeof(message));
  if (rc < 0) error("gres/vgpu: %s: GPUs hidden from the job: %s", what, message);
  else if (rc == 0 && message[0])
    debug("gres/vgpu: %s: %s", what, message);
}

extern void gres_p_job_set_env(char*** job_env_ptr, bitstr_t* gres_bit_alloc, uint64_t gres_cnt,
                               gres_internal_flags_t flags) {
  (void)gres_bit_alloc;
  (void)flags;
  _set_job_env(job_env_ptr, gres_cnt, "job_set_env");
}

extern void gres_p_step_set_env(char*** step_env_ptr, bitstr_t* gres_bit_alloc, uint64_t gres_cnt,
                                gres_internal_flags_t flags) {
  (void)gres_bit_alloc;
  (void)flags;
  _set_job_env(step_env_ptr, gres_cnt, "step_set_env");
}

/* Tasks inherit the step environment; nothing per task. */
extern void gres_p_task_set_env(char*** step_env_ptr, bitstr_t* gres_bit_alloc, uint64_t gres_cnt,
                                bitstr_t* usable_gres, gres_internal_flags_t flags) {
  (void)step_env_ptr;
  (void)gres_bit_alloc;
  (void)gres_cnt;
  (void)usable_gres;
  (void)flags;
}

extern void gres_p_send_stepd(buf_t* buffer) { (void)buffer; }

extern void gres_p_recv_stepd(buf_t* buffer) { (void)buffer; }

#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(24, 11, 0)
/* Required until 24.05 or 24.11; declared with plain types because their enum arguments went away
 * with them. Nothing to report: the job's instances are in jobs/<id>.json, not in Slurm. */
extern int gres_p_get_job_info(void* gres_js, uint32_t node_inx, int data_type, void* data) {
  (void)gres_js;
  (void)node_inx;
  (void)data_type;
  (void)data;
  return EINVAL;
}

extern int gres_p_get_step_info(void* gres_ss, uint32_t node_inx, int data_type, void* data) {
  (void)gres_ss;
  (void)node_inx;
  (void)data_type;
  (void)data;
  return EINVAL;
}
#endif

/* Count-only GRES: no device files for Slurm to constrain (the prolog owns the MIG devices). */
extern vgpu_list_t gres_p_get_devices(void) { return NULL; }

extern void gres_p_step_hardware_init(bitstr_t* usable_gres, char* settings) {
  (void)usable_gres;
  (void)settings;
}

extern void gres_p_step_hardware_fini(void) {}

/* ---- Prolog/Epilog: VGPU_ALLOC=<type>:<n>[,...] ----
 * slurmctld packs only per-node counts and bitmaps for epilog info, so the type name is spelled
 * into each node's bitmap (see contract/alloc_codec.h). */
static vgpu_prep_t* _prep_build_env(gres_job_state_t* gres_js) {
  vgpu_prep_t* ei;
  unsigned char bits[8 * VGPU_GRES_TYPE_MAX];
  size_t nbits = 0;

  if (!gres_js) return NULL;
  ei = xmalloc(sizeof(*ei));
  ei->node_cnt = gres_js->node_cnt;
  if (gres_js->gres_cnt_node_alloc && ei->node_cnt) {
    ei->gres_cnt_node_alloc = xcalloc(ei->node_cnt, sizeof(uint64_t));
    memcpy(ei->gres_cnt_node_alloc, gres_js->gres_cnt_node_alloc, ei->node_cnt * sizeof(uint64_t));
  }
  if (gres_js->type_name) nbits = vgpu_gres_type_bits(gres_js->type_name, bits, sizeof(bits));
  if (nbits && ei->node_cnt) {
    ei->gres_bit_alloc = xcalloc(ei->node_cnt, sizeof(bitstr_t*));
    for (uint32_t n = 0; n < ei->node_cnt; n++) {
      ei->gres_bit_alloc[n] = bit_alloc((bitoff_t)nbits);
      for (size_t b = 0; b < nbits; b++)
        if (bits[b]) bit_set(ei->gres_bit_alloc[n], (bitoff_t)b);
    }
  }
  return ei;
}

static void _prep_set_env(char*** epilog_env_ptr, vgpu_prep_t* gres_ei, int node_inx) {
  unsigned char bits[8 * VGPU_GRES_TYPE_MAX];
  size_t nbits = 0;
  uint64_t cnt;
  char value[VGPU_ALLOC_MAX];

  if (!epilog_env_ptr || !gres_ei || node_inx < 0 || (uint32_t)node_inx >= gres_ei->node_cnt ||
      !gres_ei->gres_cnt_node_alloc)
    return;
  cnt = gres_ei->gres_cnt_node_alloc[node_inx];
  if (cnt == 0) return;
  if (gres_ei->gres_bit_alloc && gres_ei->gres_bit_alloc[node_inx]) {
    bitstr_t* bm = gres_ei->gres_bit_alloc[node_inx];
    bitoff_t size = bit_size(bm);
    if (size > 0 && (size_t)size <= sizeof(bits)) {
      nbits = (size_t)size;
      for (bitoff_t b = 0; b < size; b++) bits[b] = bit_test(bm, b) ? 1 : 0;
    }
  }
  if (vgpu_gres_alloc_append(getenvp(*epilog_env_ptr, "VGPU_ALLOC"), bits, nbits, cnt, value, sizeof(value)) < 0) {
    error("gres/vgpu: epilog_set_env in %s: %s", _daemon(), value);
    return;
  }
  env_array_overwrite(epilog_env_ptr, "VGPU_ALLOC", value);
}

/* The same two entry points under each release's name. */
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 2, 0)
extern vgpu_prep_t* gres_p_prep_build_env(gres_job_state_t* gres_js) { return _prep_build_env(gres_js); }

extern void gres_p_prep_set_env(char*** prep_env_ptr, vgpu_prep_t* gres_prep, int node_inx) {
  _prep_set_env(prep_env_ptr, gres_prep, node_inx);
}
#else
extern vgpu_prep_t* gres_p_epilog_build_env(gres_job_state_t* gres_js) { return _prep_build_env(gres_js); }

extern void gres_p_epilog_set_env(char*** epilog_env_ptr, vgpu_prep_t* gres_ei, int node_inx) {
  _prep_set_env(epilog_env_ptr, gres_ei, node_inx);
}
#endif
