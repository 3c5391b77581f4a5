#!/usr/bin/python3
"""The Open OnDemand side of viz sessions, checked against what ood_core reads (its public
source, not installed here: OnDemand is not in Debian).

  ood_app_check.py APP_DIR            the batch_connect app (docs/ood/bc_vgpu_viz): manifest and
                                      form parse; submit.yml.erb renders to YAML asking for the
                                      basic template with the VNC template's connection keys and
                                      our gres; every template/*.sh.erb renders (Ruby's ERB, as
                                      OnDemand does) to valid bash; view.html.erb renders a noVNC
                                      link through OnDemand's rnode proxy with the password in the
                                      fragment
  ood_app_check.py --connection FILE  a connection.yml vgpu-viz wrote: exactly the keys
                                      ood_core's VNC template writes (create_yml in
                                      lib/ood_core/batch_connect/template.rb: host, port,
                                      password; templates/vnc.rb adds display, websocket,
                                      spassword), one "key: value" line each, private (0600)
Exit 0 when everything holds; each problem is printed.
"""
import argparse
import os
import stat
import subprocess
import sys
import tempfile

import yaml

VNC_TEMPLATE_KEYS = ["host", "port", "password", "display", "websocket", "spassword"]
PROBLEMS = []


def problem(text):
    PROBLEMS.append(text)
    print(f"ood_app_check: FAIL: {text}")


def render(path, **variables):
    """Renders an .erb file the way OnDemand does (Ruby ERB, '-' trim mode) with these locals."""
    assigns = "".join(f"{k} = {v!r}\n".replace("'", '"') for k, v in variables.items())
    script = assigns + 'require "erb"\nprint ERB.new(File.read(ARGV[0]), trim_mode: "-").result(binding)\n'
    done = subprocess.run(["ruby", "-e", script, path], capture_output=True, text=True)
    if done.returncode != 0:
        problem(f"{path}: ERB does not render: {done.stderr.strip()}")
        return ""
    return done.stdout


def check_app(app):
    for name in ("manifest.yml", "form.yml", "submit.yml.erb", "view.html.erb",
                 "template/before.sh.erb", "template/script.sh.erb", "template/after.sh.erb"):
        if not os.path.isfile(os.path.join(app, name)):
            problem(f"{app}: no {name}")
    if PROBLEMS:
        return
    manifest = yaml.safe_load(open(os.path.join(app, "manifest.yml")))
    if manifest.get("role") != "batch_connect":
        problem("manifest.yml: role must be batch_connect")
    form = yaml.safe_load(open(os.path.join(app, "form.yml")))
    attributes = form.get("attributes", {})
    for item in form.get("form", []):
        if not item.startswith("bc_") and item not in attributes:
            problem(f"form.yml: form item {item} has no attribute")
    pools = [o[1] for o in attributes.get("viz_pool", {}).get("options", [])]
    if not pools:
        problem("form.yml: viz_pool offers no pool")
    submit = yaml.safe_load(render(os.path.join(app, "submit.yml.erb"), viz_pool=pools[0] if pools else "x"))
    bc = (submit or {}).get("batch_connect", {})
    if bc.get("template") != "basic":
        problem("submit.yml.erb: batch_connect.template must be basic (the prolog starts the VM, not Xvnc)")
    keys = ["host", "port", "password"] + bc.get("conn_params", [])
    if sorted(keys) != sorted(VNC_TEMPLATE_KEYS):
        problem(f"submit.yml.erb: connection keys {keys}, the VNC template's are {VNC_TEMPLATE_KEYS}")
    native = (submit or {}).get("script", {}).get("native", [])
    if f"--gres=vgpu:{pools[0] if pools else 'x'}:1" not in native:
        problem(f"submit.yml.erb: script.native {native} does not ask for one session of the chosen pool")
    for part in ("before", "script", "after"):
        text = render(os.path.join(app, f"template/{part}.sh.erb"))
        with tempfile.NamedTemporaryFile("w", suffix=".sh") as f:
            f.write(text)
            f.flush()
            syntax = subprocess.run(["bash", "-n", f.name], capture_output=True, text=True)
        if syntax.returncode != 0:
            problem(f"template/{part}.sh.erb renders to invalid bash: {syntax.stderr.strip()}")
        if part == "script" and "--ood-connection" not in text:
            problem("template/script.sh.erb does not run vgpu-viz --ood-connection")
        if part == "after" and "create_yml () { :; }" not in text:
            problem("template/after.sh.erb does not stop the template overwriting vgpu-viz's connection.yml")
    view = render(os.path.join(app, "view.html.erb"), host="gpu-node-07", websocket=20042, password="Ab12Cd34")
    if "path=rnode%2Fgpu-node-07%2F20042%2Fwebsockify" not in view:
        problem(f"view.html.erb: no noVNC link through rnode/<host>/<websocket>/websockify: {view}")
    query = view.split("#")[0]
    if "Ab12Cd34" in query or "#&amp;password=Ab12Cd34" not in view:
        problem("view.html.erb: the password must be in the link's fragment only")


def check_connection(path):
    mode = stat.S_IMODE(os.stat(path).st_mode)
    if mode != 0o600:
        problem(f"{path}: mode {mode:o}, expected 600 (it holds the password)")
    lines = open(path).read().splitlines()
    keys = [line.split(":", 1)[0] for line in lines]
    if keys != VNC_TEMPLATE_KEYS:
        problem(f"{path}: keys {keys}, expected {VNC_TEMPLATE_KEYS} (ood_core's create_yml order)")
    data = yaml.safe_load(open(path)) or {}
    if not isinstance(data.get("port"), int) or data.get("websocket") != data.get("port"):
        problem(f"{path}: port and websocket must be the same number: {data}")
    if not isinstance(data.get("password"), str) or len(data.get("password", "")) < 8:
        problem(f"{path}: no password")
    if not isinstance(data.get("host"), str):
        problem(f"{path}: no host")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("app", nargs="?")
    ap.add_argument("--connection")
    a = ap.parse_args()
    if a.app:
        check_app(a.app)
    if a.connection:
        check_connection(a.connection)
    if not a.app and not a.connection:
        ap.error("name an app directory or --connection FILE")
    print(f"ood_app_check: {'OK' if not PROBLEMS else f'{len(PROBLEMS)} problem(s)'}")
    return 0 if not PROBLEMS else 1


if __name__ == "__main__":
    sys.exit(main())
