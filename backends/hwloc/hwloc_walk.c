#include "hwloc_walk.h"

#include <errno.h>
#include <hwloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void set_err(char* err, size_t err_len, const char* fmt, ...) {
  if (err == NULL || err_len == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, err_len, fmt, ap);
  va_end(ap);
}

/* OS indexes of the set bits; *out is NULL for an empty set. Returns -1 on allocation failure or
 * an infinite set (hwloc never hands those out for objects, but a corrupt XML could). */
static int bitmap_to_array(hwloc_const_bitmap_t set, unsigned** out, size_t* n) {
  *out = NULL;
  *n = 0;
  if (set == NULL) return 0;
  int weight = hwloc_bitmap_weight(set);
  if (weight < 0) return -1;
  if (weight == 0) return 0;
  unsigned* ids = malloc((size_t)weight * sizeof *ids);
  if (ids == NULL) return -1;
  size_t i = 0;
  unsigned id;
  hwloc_bitmap_foreach_begin(id, set) { ids[i++] = id; }
  hwloc_bitmap_foreach_end();
  *out = ids;
  *n = i;
  return 0;
}

static int report_cores(hwloc_topology_t topo, const vgpu_hwloc_visitor* v) {
  hwloc_obj_t core = NULL;
  while ((core = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_CORE, core)) != NULL) {
    unsigned* pus;
    size_t n;
    if (bitmap_to_array(core->cpuset, &pus, &n) != 0) return -1;
    v->core(v->ctx, core->logical_index, pus, n);
    free(pus);
  }
  return 0;
}

static int report_ancestor(const vgpu_hwloc_visitor* v, hwloc_obj_t obj) {
  unsigned *pus, *nodes;
  size_t n_pus, n_nodes;
  if (bitmap_to_array(obj->cpuset, &pus, &n_pus) != 0) return -1;
  if (bitmap_to_array(obj->nodeset, &nodes, &n_nodes) != 0) {
    free(pus);
    return -1;
  }
  v->ancestor(v->ctx, hwloc_obj_type_string(obj->type), obj->logical_index, pus, n_pus, nodes, n_nodes);
  free(pus);
  free(nodes);
  return 0;
}

static int report_pci(hwloc_topology_t topo, const vgpu_hwloc_visitor* v) {
  hwloc_obj_t pci = NULL;
  while ((pci = hwloc_get_next_pcidev(topo, pci)) != NULL) {
    const struct hwloc_pcidev_attr_s* a = &pci->attr->pcidev;
    vgpu_hwloc_pci dev = {a->domain, a->bus, a->dev, a->func, a->vendor_id, a->device_id, a->class_id};
    v->pci_device(v->ctx, &dev);
    for (hwloc_obj_t up = hwloc_get_non_io_ancestor_obj(topo, pci); up != NULL; up = up->parent) {
      if (report_ancestor(v, up) != 0) return -1;
    }
  }
  return 0;
}

int vgpu_hwloc_walk(const char* xml_path, const vgpu_hwloc_visitor* visitor, char* err, size_t err_len) {
  set_err(err, err_len, "%s", "");
  if (xml_path != NULL) {
    /* hwloc only says "failed" for a missing file; check first so the error names the cause. */
    FILE* f = fopen(xml_path, "r");
    if (f == NULL) {
      set_err(err, err_len, "cannot read topology XML %s: %s", xml_path, strerror(errno));
      return -1;
    }
    fclose(f);
  }
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) {
    set_err(err, err_len, "hwloc_topology_init: %s", strerror(errno));
    return -1;
  }
  int rc = -1;
  if (xml_path != NULL && hwloc_topology_set_xml(topo, xml_path) != 0) {
    set_err(err, err_len, "topology XML %s: hwloc_topology_set_xml: %s", xml_path, strerror(errno));
    goto out;
  }
  /* hwloc drops I/O objects by default; GPUs are PCI devices, so keep all of those and the
   * bridges that matter for attaching them. Slurm's Cores= numbers all cores of the node, so a
   * cgroup-restricted slurmd must still see the disallowed ones. */
  hwloc_topology_set_type_filter(topo, HWLOC_OBJ_PCI_DEVICE, HWLOC_TYPE_FILTER_KEEP_ALL);
  hwloc_topology_set_type_filter(topo, HWLOC_OBJ_BRIDGE, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
  if (hwloc_topology_load(topo) != 0) {
    int e = errno;
    if (xml_path != NULL)
      set_err(err, err_len, "topology XML %s: hwloc could not load it (%s); is it an lstopo --of xml export?", xml_path,
              e != 0 ? strerror(e) : "invalid content");
    else
      set_err(err, err_len, "hwloc_topology_load on this machine: %s", strerror(e));
    goto out;
  }
  if (report_cores(topo, visitor) != 0 || report_pci(topo, visitor) != 0) {
    set_err(err, err_len, "out of memory while walking the topology");
    goto out;
  }
  rc = 0;
out:
  hwloc_topology_destroy(topo);
  return rc;
}
