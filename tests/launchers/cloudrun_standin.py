"""The Cloud Run stand-in the launcher tests use: memorybench/cloudrun/standin.py (in the
package, so that `memorybench dev cloud-emulators` starts the same one)."""

from memorybench.cloudrun.standin import CloudRunStandin, StandinExecution, StandinJob

__all__ = ["CloudRunStandin", "StandinExecution", "StandinJob"]
