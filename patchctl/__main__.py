from patchctl.cli import run

run()
