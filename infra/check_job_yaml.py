"""Check rendered Cloud Run job YAML offline against gcloud's own Cloud Run v1 message types.

Run with the Python bundled in the Google Cloud SDK (it has gcloud's libraries):
    PROJECT=demo infra/deploy.sh --render-only /tmp/jobs
    "$(gcloud info --format='value(basic.python_location)')" infra/check_job_yaml.py /tmp/jobs/*.yaml

It parses each file as `gcloud run jobs replace` does (YAML -> run.v1 Job message, unknown
or mistyped fields are errors) and prints what each job would run. It calls no API.
"""

import os
import subprocess
import sys


def _sdk_lib():
    root = os.environ.get("CLOUDSDK_ROOT_DIR")
    if not root:
        out = subprocess.run(["gcloud", "info", "--format=value(installation.sdk_root)"], capture_output=True, text=True, check=True)
        root = out.stdout.strip()
    return os.path.join(root, "lib")


def main(paths):
    lib = _sdk_lib()
    sys.path[:0] = [lib, os.path.join(lib, "third_party")]
    from googlecloudsdk.api_lib.run import job as run_job
    from googlecloudsdk.api_lib.util import apis
    from googlecloudsdk.api_lib.util import messages as messages_util
    from googlecloudsdk.core import yaml

    messages = apis.GetMessagesModule("run", "v1")
    failed = 0
    for path in paths:
        data = yaml.load_path(path)
        try:
            if "spec" not in data or "template" not in data["spec"]:
                raise ValueError("spec.template is required")
            data["spec"]["template"].setdefault("metadata", {})
            job = run_job.Job(messages_util.DictToMessageWithErrorCheck(data, messages.Job), messages)
            task = job.spec.template.spec.template.spec
            (container,) = task.containers
            limits = {p.key: p.value for p in container.resources.limits.additionalProperties}
            secrets = [e.name for e in container.env if e.valueFrom and e.valueFrom.secretKeyRef]
            print(
                f"ok {path}: {job.name} image={container.image} command={container.command} cpu={limits.get('cpu')} "
                f"memory={limits.get('memory')} parallelism={job.spec.template.spec.parallelism} tasks={job.spec.template.spec.taskCount} "
                f"retries={task.maxRetries} timeout={task.timeoutSeconds}s secrets={secrets}"
            )
        except Exception as e:  # noqa: BLE001 - report every file
            failed += 1
            print(f"FAILED {path}: {type(e).__name__}: {e}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
