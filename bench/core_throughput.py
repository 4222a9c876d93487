"""Core throughput benchmark: `python3 bench/core_throughput.py [--json]` = `evgrid bench`."""

from evgrid_cli.main import main

if __name__ == "__main__":
    import sys

    raise SystemExit(main(["bench", *sys.argv[1:]]))
