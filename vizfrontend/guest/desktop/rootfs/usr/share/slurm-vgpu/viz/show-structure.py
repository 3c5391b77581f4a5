# What PyMOL shows when a viz session starts: the demo structure as a magenta cartoon on black
# (colours the end-to-end test looks for in the browser), and a note of what it loaded, which the
# guest's reporter copies to the serial console. A Python script, so PyMOL does not echo it.
from pymol import cmd

cmd.load("/usr/share/slurm-vgpu/viz/vgpu-helix.pdb", "demo")
cmd.hide("everything")
cmd.dss()
cmd.show("cartoon")
cmd.color("magenta")
cmd.bg_color("black")
cmd.orient()
with open("/tmp/vgpu-viz-pymol.status", "w") as status:
    status.write("loaded %s atoms %d" % (" ".join(cmd.get_names()), cmd.count_atoms("all")))
