"""tools/torch_export/setup_venv.sh without installing anything: fake venvs
whose bin/python answers `-m pip freeze` from a file and logs its calls."""
import os
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
SCRIPT = os.path.join(ROOT, "tools", "torch_export", "setup_venv.sh")
REQ = os.path.join(ROOT, "tools", "torch_export", "requirements.txt")


def pins():
    with open(REQ, encoding="utf-8") as f:
        return [ln.strip() for ln in f if "==" in ln and not ln.lstrip().startswith("#")]


class SetupVenv(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.venv = os.path.join(self.tmp.name, "venv")
        self.log = os.path.join(self.tmp.name, "calls")

    def tearDown(self):
        self.tmp.cleanup()

    def fake_venv(self, frozen, stamp=None):
        os.makedirs(os.path.join(self.venv, "bin"))
        with open(os.path.join(self.venv, "pyvenv.cfg"), "w") as f:
            f.write("home = /usr/bin\n")
        with open(os.path.join(self.venv, "frozen"), "w") as f:
            f.write("\n".join(frozen) + "\n")
        py = os.path.join(self.venv, "bin", "python")
        with open(py, "w") as f:
            f.write(f'#!/bin/sh\necho "$*" >>{self.log}\ncat {self.venv}/frozen\n')
        os.chmod(py, 0o755)
        if stamp is not None:
            with open(os.path.join(self.venv, ".passrun-requirements.sha256"), "w") as f:
                f.write(stamp + "\n")

    def run_script(self, *args, venv=None):
        env = {**os.environ, "PASSRUN_TORCH_VENV": venv or self.venv}
        return subprocess.run(["sh", SCRIPT, *args], capture_output=True, text=True, env=env)

    def stamp(self):
        with open(os.path.join(self.venv, ".passrun-requirements.sha256")) as f:
            return f.read().strip()

    def want(self):
        return subprocess.run(["sha256sum", REQ], capture_output=True, text=True).stdout.split()[0]

    def test_pins_are_the_issues(self):
        self.assertLessEqual({"torch==2.15.0", "torchvision==0.29.2", "transformers==5.24.0"},
                             set(pins()))

    def test_a_venv_with_the_pins_and_no_stamp_is_adopted(self):
        frozen = [p.replace("torch==2.15.0", "torch==2.15.0+cu132") for p in pins()] + ["six==1.0"]
        self.fake_venv(frozen)
        r = self.run_script()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, os.path.join(self.venv, "bin", "python") + "\n")
        self.assertIn("adopted", r.stderr)
        self.assertEqual(self.stamp(), self.want())

    def test_a_matching_stamp_is_reused_without_running_pip(self):
        self.fake_venv([], stamp=self.want())
        r = self.run_script()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("unchanged", r.stderr)
        self.assertFalse(os.path.exists(self.log), "pip ran")

    def test_a_changed_pin_needs_a_new_venv(self):
        frozen = [p.replace("torch==2.15.0", "torch==2.14.0") for p in pins()]
        self.fake_venv(frozen, stamp="0" * 64)      # made from another requirements.txt
        r = self.run_script("--check")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("torch is not 2.15.0", r.stderr)
        self.assertIn("needs to be (re)created", r.stderr)
        self.assertEqual(self.stamp(), "0" * 64)
        self.assertEqual(r.stdout, "")

    def test_a_venv_inside_the_clone_is_refused(self):
        r = self.run_script(venv=os.path.join(ROOT, "build-venv"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("inside the clone", r.stderr)

    def test_a_folder_that_is_not_a_venv_is_not_removed(self):
        os.makedirs(self.venv)
        keep = os.path.join(self.venv, "precious")
        open(keep, "w").close()
        r = self.run_script()
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("not a virtual environment", r.stderr)
        self.assertTrue(os.path.exists(keep))


if __name__ == "__main__":
    unittest.main()
