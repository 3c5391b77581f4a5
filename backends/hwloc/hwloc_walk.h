/* Thin C adapter over hwloc: loads a topology (live or XML) with PCI devices kept and reports what
 * the locality logic needs through callbacks, so no hwloc type or allocation crosses into C++. */
#ifndef VGPU_HWLOC_WALK_H
#define VGPU_HWLOC_WALK_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vgpu_hwloc_pci {
  unsigned domain, bus, dev, func;
  unsigned short vendor_id, device_id, class_id;
} vgpu_hwloc_pci;

typedef struct vgpu_hwloc_visitor {
  void* ctx;
  /* Called once per Core, in logical order, with its PUs' OS indexes. */
  void (*core)(void* ctx, unsigned logical_index, const unsigned* pus, size_t n_pus);
  /* Called once per PCI device, then ancestor() for each non-I/O ancestor, nearest first. */
  void (*pci_device)(void* ctx, const vgpu_hwloc_pci* dev);
  void (*ancestor)(void* ctx, const char* type, unsigned logical_index, const unsigned* pus, size_t n_pus,
                   const unsigned* numa_nodes, size_t n_numa);
} vgpu_hwloc_visitor;

/* Loads the topology of this machine (xml_path == NULL) or of an XML export and walks it.
 * Returns 0 on success; otherwise -1 with a one-line reason in err (always NUL-terminated). */
int vgpu_hwloc_walk(const char* xml_path, const vgpu_hwloc_visitor* visitor, char* err, size_t err_len);

#ifdef __cplusplus
}
#endif

#endif
