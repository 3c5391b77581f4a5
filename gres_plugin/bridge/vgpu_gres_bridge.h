/* C interface between the Slurm ABI layer (slurm/gres_vgpu.c) and the C++ contract code.
 * Every function is noexcept on the C++ side, never blocks beyond reading one small file, and
 * reports problems through a message buffer the C layer logs with Slurm's own logger. */
#ifndef VGPU_GRES_BRIDGE_H
#define VGPU_GRES_BRIDGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VGPU_GRES_TYPE_MAX 64   /* bytes, including the NUL */
#define VGPU_GRES_MAX_TYPES 128 /* types a node may report (catalog profiles + custom) */

typedef struct {
  char type[VGPU_GRES_TYPE_MAX];
  uint64_t count;
} vgpu_type_count_t;

typedef struct {
  vgpu_type_count_t advertised[VGPU_GRES_MAX_TYPES];
  int advertised_cnt;
  uint64_t free_cnt;
  uint64_t generation;
  char node[VGPU_GRES_TYPE_MAX];
  int used_advertisement; /* 0: everything reported as free, see message */
  char message[512];
} vgpu_reported_t;

/* The counts this node's slurmd reports, given the vgpu total declared in slurm.conf. */
void vgpu_gres_reported_counts(uint64_t configured_total, vgpu_reported_t* out);

/* This node's advertisement.json, for slurmd to watch. Returns 0, or -1 with the reason in out. */
int vgpu_gres_advertisement_path(char* out, size_t out_len);

/* Records in slurmd-report.json that slurmd now reports `rep` (only a report that used the
 * advertisement is recorded). Returns 0, or -1 with the reason in message. */
int vgpu_gres_write_slurmd_report(const vgpu_reported_t* rep, char* message, size_t message_len);

typedef void (*vgpu_setenv_fn)(void* ctx, const char* name, const char* value);

/* Sets the job's CUDA_VISIBLE_DEVICES / VGPU_PROFILES / VGPU_INSTANCES from its job record; call
 * it only for a job that holds vgpu on this node. process_title: the calling slurmstepd's title
 * ("slurmstepd: [42.0]", from /proc/self/cmdline), which names the job; env_job_id: SLURM_JOB_ID
 * from the environment being filled (NULL if unset), which an srun client sends and so must agree.
 * Returns 1 when set, -1 when there is no usable record or the two disagree (GPUs hidden:
 * CUDA_VISIBLE_DEVICES set empty; message says why). */
int vgpu_gres_job_env(const char* process_title, const char* env_job_id, vgpu_setenv_fn set, void* ctx, char* message,
                      size_t message_len);

/* Type name -> bitmap bits (one byte per element, 0/1). Returns the bit count, 0 if it does not fit. */
size_t vgpu_gres_type_bits(const char* type, unsigned char* bits, size_t cap);

/* Appends "<type>:<count>" decoded from bits to `previous` (may be NULL) into out.
 * Returns 0, or -1 with out holding the reason. */
int vgpu_gres_alloc_append(const char* previous, const unsigned char* bits, size_t nbits, uint64_t count, char* out,
                           size_t out_len);

#ifdef __cplusplus
}
#endif

#endif
