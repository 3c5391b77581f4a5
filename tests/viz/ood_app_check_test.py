#!/usr/bin/python3
"""ood_app_check on the shipped OnDemand app, and on copies broken the ways that would stop it
working under OnDemand: each must be caught."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
APP = os.path.join(HERE, "..", "..", "docs", "ood", "bc_vgpu_viz")
CHECK = os.path.join(HERE, "ood_app_check.py")


def run(*args):
    return subprocess.run([sys.executable, CHECK, *args], capture_output=True, text=True)


class OodApp(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.app = os.path.join(self.tmp, "bc_vgpu_viz")
        shutil.copytree(APP, self.app)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def edit(self, name, old, new):
        path = os.path.join(self.app, name)
        text = open(path).read()
        self.assertIn(old, text)
        open(path, "w").write(text.replace(old, new))

    def test_the_shipped_app_passes(self):
        r = run(APP)
        self.assertEqual(r.returncode, 0, r.stdout)

    def test_the_vnc_template_instead_of_basic_is_caught(self):
        self.edit("submit.yml.erb", "template: basic", "template: vnc")
        self.assertIn("template must be basic", run(self.app).stdout)

    def test_a_missing_connection_key_is_caught(self):
        self.edit("submit.yml.erb", "    - spassword\n", "")
        self.assertIn("connection keys", run(self.app).stdout)

    def test_letting_the_template_overwrite_the_connection_file_is_caught(self):
        self.edit("template/after.sh.erb", "create_yml () { :; }", "")
        self.assertIn("overwriting", run(self.app).stdout)

    def test_a_script_that_is_not_bash_is_caught(self):
        self.edit("template/script.sh.erb", 'exec vgpu-viz', 'if then vgpu-viz')
        self.assertIn("invalid bash", run(self.app).stdout)

    def test_the_password_in_the_query_is_caught(self):
        self.edit("view.html.erb", "#&amp;password=", "&amp;password=")
        self.assertIn("fragment", run(self.app).stdout)

    def test_a_connection_file_with_other_keys_or_mode_is_caught(self):
        path = os.path.join(self.tmp, "connection.yml")
        with open(path, "w") as f:
            f.write("host: n1\nport: 20042\npassword: Ab12Cd34\n")
        os.chmod(path, 0o644)
        out = run("--connection", path).stdout
        self.assertIn("mode 644", out)
        self.assertIn("keys", out)


if __name__ == "__main__":
    unittest.main()
