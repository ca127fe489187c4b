"""The ``cronradar`` command: ``cronradar exec`` (run a job and report it)."""
import sys

from cronradar_sdk import cronradar_exec


def main(argv=None) -> int:
    """Entry point of the ``cronradar`` console script; returns the exit status."""
    return cronradar_exec.main(argv)


if __name__ == "__main__":
    sys.exit(main())
